// Subcommands of the meganeura CLI that live in their own files.
#pragma once

int generate_command(int argc, char** argv);
