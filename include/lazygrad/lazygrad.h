// The umbrella header: everything a lazygrad user needs.
#pragma once

#include "lazygrad/counters.h"
#include "lazygrad/data.h"
#include "lazygrad/dtype.h"
#include "lazygrad/error.h"
#include "lazygrad/gradcheck.h"
#include "lazygrad/jit.h"
#include "lazygrad/nn.h"
#include "lazygrad/optim.h"
#include "lazygrad/runtime.h"
#include "lazygrad/safetensors.h"
#include "lazygrad/sampling.h"
#include "lazygrad/scalar.h"
#include "lazygrad/state_dict.h"
#include "lazygrad/tensor.h"
#include "lazygrad/tokenizer.h"
#include "lazygrad/variable.h"
