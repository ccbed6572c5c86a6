"""``ember.math``: TensorFlow's ``tf.math`` namespace."""

from ember.ops.math_ops import *  # noqa: F401,F403
from ember.ops.nn_ops import l2_normalize, log_sigmoid, log_softmax, softmax, softplus, softsign  # noqa: F401
from ember.ops.indexing_ops import (bincount, segment_max, segment_mean, segment_min, segment_prod,  # noqa: F401
                                    segment_sum, unsorted_segment_max, unsorted_segment_mean,
                                    unsorted_segment_min, unsorted_segment_prod, unsorted_segment_sqrt_n,
                                    unsorted_segment_sum)
from ember.ops.sort_ops import approx_max_k, approx_min_k, in_top_k, top_k  # noqa: F401
from ember.ops.special_math_ops import (betainc, cumulative_logsumexp, erfcinv, igamma, igammac, lbeta,  # noqa: F401
                                        polyval, zeta)
from ember.ops.no_nan_ops import divide_no_nan, multiply_no_nan  # noqa: F401
from ember.ops.confusion_matrix import confusion_matrix  # noqa: F401
from ember.ops.math_composite_ops import (accumulate_n, invert_permutation, is_inf, is_non_decreasing,  # noqa: F401
                                          is_strictly_increasing, nextafter, reciprocal_no_nan, zero_fraction)
from ember.math import special  # noqa: F401,E402 - tf.math.special
