// C++ façade for run-time configuration, as ember.config in Python: which graph passes run when a staged
// function is first instantiated, and the executor's thread counts.
//
//   ember::config::OptimizerOptions options = ember::config::optimizer_options();
//   options.elementwise_fusion = false;              // functions traced from now on skip fusion
//   ember::config::set_optimizer_options(options);
//   ember::config::set_inter_op_parallelism_threads(1);
#pragma once

#include "ember/core/parallel.h"
#include "ember/jit/jit.h"
#include "ember/passes/pass.h"

namespace ember::config {

using OptimizerOptions = passes::OptimizerOptions;

inline OptimizerOptions optimizer_options() { return passes::optimizer_options(); }
inline void set_optimizer_options(const OptimizerOptions& options) { passes::set_optimizer_options(options); }

/// 0 = one per core.
inline void set_inter_op_parallelism_threads(int threads) { set_inter_op_threads(threads); }
inline void set_intra_op_parallelism_threads(int threads) { set_intra_op_threads(threads); }

/// Stops ember's background work (the thread that compiles fused kernels to native code) now. Returning
/// from main does it too, before static objects are destroyed; a program that may call exit() from another
/// thread than main's while a native compile runs must call it first (Note [The compile thread]).
inline void shutdown() { jit::shutdown(); }

}  // namespace ember::config
