// meganeura: train and run neural networks on any GPU through Vulkan compute.
#pragma once
#include "meganeura/autodiff.hpp"
#include "meganeura/data.hpp"
#include "meganeura/device.hpp"
#include "meganeura/dtype.hpp"
#include "meganeura/error.hpp"
#include "meganeura/graph.hpp"
#include "meganeura/init.hpp"
#include "meganeura/ops.hpp"
#include "meganeura/io.hpp"
#include "meganeura/session.hpp"
#include "meganeura/train.hpp"
#include "meganeura/trainer.hpp"
