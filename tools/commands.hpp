// Subcommands of the meganeura CLI that live in their own files: each reads its arguments with
// cli::Args and has a help text that `meganeura <command> --help` prints.
#pragma once

#include "cli_args.hpp"

extern const char* const kGenerateHelp;
int generate_command(cli::Args& args);
