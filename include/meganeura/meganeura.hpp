// meganeura: train and run neural networks on any GPU through Vulkan compute.
#pragma once
#include "meganeura/device.hpp"
#include "meganeura/dtype.hpp"
#include "meganeura/error.hpp"
#include "meganeura/graph.hpp"
#include "meganeura/ops.hpp"
#include "meganeura/session.hpp"
