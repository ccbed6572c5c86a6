"""``ember.nn``: TensorFlow's ``tf.nn`` namespace."""

from ember.ops.nn_ops import *  # noqa: F401,F403
from ember.ops.nn_conv_ops import *  # noqa: F401,F403
from ember.ops.nn_norm_ops import *  # noqa: F401,F403
from ember.ops.ctc_ops import *  # noqa: F401,F403
from ember.ops.embedding_ops import embedding_lookup, embedding_lookup_sparse, safe_embedding_lookup_sparse  # noqa: F401

from ember.ops.space_batch_ops import atrous_conv2d, depth_to_space, space_to_batch, space_to_depth  # noqa

# ---- sorting and selection (tf.nn's second names for tf.math's)
from ember.ops.sort_ops import approx_max_k, approx_min_k, in_top_k, top_k  # noqa: F401,E402
from ember.ops.math_composite_ops import zero_fraction  # noqa: F401,E402
from ember.distribute.distribute_lib import compute_average_loss, scale_regularization_loss  # noqa: F401,E402
from ember.ops.nn_moments_ops import (crelu, log_poisson_loss, normalize_moments,  # noqa: F401,E402
                                      sufficient_statistics, weighted_moments)
from ember.ops.candidate_sampling_ops import (all_candidate_sampler, compute_accidental_hits,  # noqa: F401,E402
                                              fixed_unigram_candidate_sampler, learned_unigram_candidate_sampler,
                                              nce_loss, sampled_softmax_loss)
