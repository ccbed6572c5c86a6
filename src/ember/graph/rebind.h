// Rebinding a traced function to other variables: ember's graphs name a variable by id in the attribute
// of its resource ops, so a trace made for one variable argument serves another only through a copy
// naming the other's id.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>

#include "ember/graph/graph.h"

namespace ember {

/// A copy of `fn` naming other variables: each resource op (kReadsResource/kWritesResource, attribute 0)
/// whose variable id is a key of `ids` names the mapped id instead, and each call of a library function
/// (a string attribute naming one) that uses such an id calls a copy rebound the same way (registered in
/// the global library, kept alive by the copy's `callees`). One trace thus serves every set of variables
/// of the same dtypes and shapes passed as arguments. Fails (FailedPrecondition) where a rebound function
/// has a custom gradient region, whose replay would rerun Python that names the original variables.
StatusOr<std::shared_ptr<FunctionGraph>> rebind_variables(const FunctionGraph& fn,
                                                          const std::unordered_map<int64_t, int64_t>& ids);

}  // namespace ember
