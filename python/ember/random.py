"""``ember.random``: TensorFlow's ``tf.random`` namespace."""

from ember.ops.random_ops import (categorical, fold_in, split, gamma, normal, poisson, set_seed, shuffle,  # noqa: F401
                                  stateless_binomial, stateless_categorical, stateless_gamma,
                                  stateless_normal, stateless_poisson, stateless_truncated_normal,
                                  stateless_uniform, truncated_normal, uniform)
from ember.ops.stateful_random_ops import (Algorithm, Generator, create_rng_state,  # noqa: F401
                                           get_global_generator, set_global_generator)
from ember.ops.candidate_sampling_ops import (all_candidate_sampler, fixed_unigram_candidate_sampler,  # noqa: F401,E402
                                              learned_unigram_candidate_sampler, log_uniform_candidate_sampler,
                                              uniform_candidate_sampler)
