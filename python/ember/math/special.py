"""``ember.math.special``: TensorFlow's ``tf.math.special`` namespace, the special functions of
src/ember/ops/special_functions.cc (docs/ops_indexing_sorting_math.md)."""

from ember import _C
from ember.ops.math_ops import _make_wrapper
from ember.ops.math_ops import bessel_i0, bessel_i0e, bessel_i1, bessel_i1e  # noqa: F401 - generated

__all__ = ["bessel_i0", "bessel_i0e", "bessel_i1", "bessel_i1e", "bessel_j0", "bessel_j1", "bessel_k0",
           "bessel_k0e", "bessel_k1", "bessel_k1e", "bessel_y0", "bessel_y1", "dawsn", "expint", "fresnel_cos",
           "fresnel_sin", "spence"]


def _wrapper(op_name, api_name):
    return _make_wrapper(dict(_C.op_info(op_name), api_name=api_name))


# The ops TensorFlow has only in tf.math.special: their registry rows name no api_name (that would put them
# in tf.math too), so their wrappers are made here, from the rows' docs.
bessel_j0 = _wrapper("BesselJ0", "bessel_j0")
bessel_j1 = _wrapper("BesselJ1", "bessel_j1")
bessel_k0 = _wrapper("BesselK0", "bessel_k0")
bessel_k0e = _wrapper("BesselK0e", "bessel_k0e")
bessel_k1 = _wrapper("BesselK1", "bessel_k1")
bessel_k1e = _wrapper("BesselK1e", "bessel_k1e")
bessel_y0 = _wrapper("BesselY0", "bessel_y0")
bessel_y1 = _wrapper("BesselY1", "bessel_y1")
dawsn = _wrapper("Dawsn", "dawsn")
expint = _wrapper("Expint", "expint")
fresnel_cos = _wrapper("FresnelCos", "fresnel_cos")
fresnel_sin = _wrapper("FresnelSin", "fresnel_sin")
spence = _wrapper("Spence", "spence")
