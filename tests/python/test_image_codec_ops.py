"""The image file codecs (python/ember/ops/image_codec_ops.py, ops in src/ember/ops/image_codecs.cc) against
TensorFlow 2.21: decoded pixels bit for bit (JPEG with every dct_method, ratio, upscaling and channel count,
crops, PNG of every colour type and depth, animated GIFs with partial and transparent frames, BMP), files each
side writes decoded by the other, the shapes traced functions see, and InvalidArgumentError naming the op for
damaged, truncated and huge-dimension files, never a crash."""
import io
import resource
import struct
import zlib

import numpy as np
import pytest
import tensorflow as tf
from PIL import Image

import ember as em

RNG = np.random.default_rng(17)


def _smooth(height, width, channels):
    """A photo-like image (gradients and a little noise), which JPEG's DCT paths treat differently."""
    y, x = np.mgrid[0:height, 0:width]
    planes = [(x * 255 // max(width - 1, 1) + 40 * c) % 256 for c in range(channels)]
    image = np.stack(planes, -1) + RNG.integers(-12, 12, (height, width, channels))
    return np.clip(image + (y[..., None] * 3) % 50, 0, 255).astype(np.uint8)


IMAGES = {"noise": RNG.integers(0, 256, (23, 31, 3), dtype=np.uint8), "smooth": _smooth(40, 57, 3),
          "gray": _smooth(17, 9, 1), "tiny": RNG.integers(0, 256, (1, 1, 3), dtype=np.uint8)}


def _jpeg(name, **kwargs):
    return tf.io.encode_jpeg(IMAGES[name], **kwargs).numpy()


def _pil_bytes(image, fmt, **kwargs):
    out = io.BytesIO()
    image.save(out, format=fmt, **kwargs)
    return out.getvalue()


def _same(ours, theirs):
    assert ours.dtype.name == theirs.dtype.name
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


# ---- JPEG


@pytest.mark.parametrize("name", sorted(IMAGES))
@pytest.mark.parametrize("encoding", [{}, {"quality": 40, "chroma_downsampling": False}, {"progressive": True},
                                      {"optimize_size": True, "quality": 100}])
@pytest.mark.parametrize("dct_method", ["", "INTEGER_FAST", "INTEGER_ACCURATE"])
@pytest.mark.parametrize("channels", [0, 1, 3])
def test_decode_jpeg_matches_tensorflow_bit_for_bit(name, encoding, dct_method, channels):
    contents = _jpeg(name, **encoding)
    for ratio in (1, 2, 4, 8):
        for fancy in (True, False):
            kwargs = dict(channels=channels, ratio=ratio, fancy_upscaling=fancy, dct_method=dct_method)
            _same(em.io.decode_jpeg(contents, **kwargs), tf.io.decode_jpeg(contents, **kwargs))


def test_decode_jpeg_reads_cmyk_as_tensorflow():
    contents = _pil_bytes(Image.fromarray(_smooth(12, 20, 4), "CMYK"), "JPEG", quality=90)
    for channels in (0, 3):
        _same(em.io.decode_jpeg(contents, channels=channels), tf.io.decode_jpeg(contents, channels=channels))
    # libjpeg has no CMYK-to-gray conversion: both refuse.
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.io.decode_jpeg(contents, channels=1)
    with pytest.raises(em.errors.InvalidArgumentError, match="DecodeJpeg.*Unsupported color conversion"):
        em.io.decode_jpeg(contents, channels=1)


@pytest.mark.parametrize("window", [[0, 0, 40, 57], [3, 5, 10, 20], [17, 33, 1, 1], [0, 9, 40, 1], [39, 0, 1, 57]])
def test_decode_and_crop_jpeg_matches_tensorflow(window):
    for encoding in ({}, {"progressive": True}):
        contents = _jpeg("smooth", **encoding)
        for channels in (0, 1):
            _same(em.io.decode_and_crop_jpeg(contents, window, channels=channels),
                  tf.io.decode_and_crop_jpeg(contents, window, channels=channels))


def test_truncated_jpeg_recovers_as_tensorflow():
    contents = _jpeg("smooth")
    cut = contents[:len(contents) * 2 // 3]
    kwargs = dict(try_recover_truncated=True, acceptable_fraction=0.1)
    _same(em.io.decode_jpeg(cut, **kwargs), tf.io.decode_jpeg(cut, **kwargs))
    for ours, theirs in ((em, tf),):
        with pytest.raises(em.errors.InvalidArgumentError, match="DecodeJpeg"):
            ours.io.decode_jpeg(cut)
        with pytest.raises(tf.errors.InvalidArgumentError):
            theirs.io.decode_jpeg(cut)


@pytest.mark.parametrize("name", sorted(IMAGES))
@pytest.mark.parametrize("kwargs", [{}, {"quality": 10}, {"progressive": True, "optimize_size": True},
                                    {"chroma_downsampling": False, "density_unit": "cm", "x_density": 72,
                                     "y_density": 96}, {"xmp_metadata": "<x:xmpmeta>ember</x:xmpmeta>"}])
def test_encode_jpeg_decodes_in_tensorflow_as_its_own(name, kwargs):
    ours = em.io.encode_jpeg(IMAGES[name], **kwargs).numpy()
    theirs = tf.io.encode_jpeg(IMAGES[name], **kwargs).numpy()
    np.testing.assert_array_equal(tf.io.decode_jpeg(ours).numpy(), tf.io.decode_jpeg(theirs).numpy())
    np.testing.assert_array_equal(em.io.decode_jpeg(theirs).numpy(), tf.io.decode_jpeg(theirs).numpy())
    if "xmp_metadata" in kwargs:
        assert b"http://ns.adobe.com/xap/1.0/\x00<x:xmpmeta>ember</x:xmpmeta>" in ours


def test_encode_jpeg_format_and_density_are_tensorflows_header():
    ours = em.io.encode_jpeg(IMAGES["gray"], format="grayscale", density_unit="cm", x_density=7, y_density=9).numpy()
    # The JFIF APP0 segment: units 2 (cm), densities 7 and 9.
    assert ours[:4] == b"\xff\xd8\xff\xe0" and ours[6:11] == b"JFIF\x00"
    assert ours[13] == 2 and struct.unpack(">HH", ours[14:18]) == (7, 9)
    assert tf.io.decode_jpeg(ours).shape == (17, 9, 1)


def test_extract_jpeg_shape_and_is_jpeg():
    for name in IMAGES:
        contents = _jpeg(name)
        for dtype in (em.int32, em.int64):
            shape = em.io.extract_jpeg_shape(contents, output_type=dtype)
            assert shape.dtype == dtype
            np.testing.assert_array_equal(shape.numpy(), tf.io.extract_jpeg_shape(contents).numpy())
        assert bool(em.io.is_jpeg(contents).numpy()) and em.image.is_jpeg is em.io.is_jpeg
    png = tf.io.encode_png(IMAGES["tiny"]).numpy()
    assert not bool(em.io.is_jpeg(png).numpy()) and not bool(em.io.is_jpeg(b"").numpy())


# ---- PNG


def _png_variants():
    rgba = RNG.integers(0, 256, (6, 11, 4), dtype=np.uint8)
    wide = RNG.integers(0, 65536, (5, 4, 3), dtype=np.uint16)
    palette = Image.fromarray(_smooth(9, 13, 3)).convert("P", palette=Image.ADAPTIVE, colors=7)
    transparent = palette.copy()
    transparent.info["transparency"] = 2
    return {
        "gray": tf.io.encode_png(IMAGES["gray"]).numpy(),
        "gray_alpha": tf.io.encode_png(rgba[..., :2]).numpy(),
        "rgb": tf.io.encode_png(IMAGES["noise"]).numpy(),
        "rgba": tf.io.encode_png(rgba).numpy(),
        "rgb16": tf.io.encode_png(tf.constant(wide)).numpy(),
        "gray16": tf.io.encode_png(tf.constant(wide[..., :1])).numpy(),
        "palette": _pil_bytes(palette, "PNG"),
        "palette_trns": _pil_bytes(transparent, "PNG"),
        "bits1": _pil_bytes(Image.fromarray(IMAGES["gray"][..., 0] > 128), "PNG"),
        "interlaced": _pil_bytes(Image.fromarray(IMAGES["smooth"]), "PNG"),
    }


PNGS = _png_variants()


@pytest.mark.parametrize("name", sorted(PNGS))
@pytest.mark.parametrize("channels", [0, 1, 3, 4])
def test_decode_png_matches_tensorflow(name, channels):
    contents = PNGS[name]
    _same(em.io.decode_png(contents, channels=channels), tf.io.decode_png(contents, channels=channels))
    _same(em.io.decode_image(contents, channels=channels, dtype=em.float32),
          tf.io.decode_image(contents, channels=channels, dtype=tf.float32))


@pytest.mark.parametrize("channels", [1, 2, 3, 4])
@pytest.mark.parametrize("compression", [-1, 0, 9])
def test_encode_png_round_trips_through_tensorflow(channels, compression):
    image = RNG.integers(0, 256, (3, 2, 7, 5, channels), dtype=np.uint8)
    files = em.io.encode_png(image, compression=compression)
    assert files.dtype == em.string and files.shape == (3, 2)
    for index in np.ndindex(3, 2):
        np.testing.assert_array_equal(tf.io.decode_png(files.numpy()[index]).numpy(), image[index])
    single = em.image.encode_png(image[0, 0], compression=compression).numpy()
    np.testing.assert_array_equal(em.io.decode_png(single).numpy(), image[0, 0])
    if compression == -1:
        # Same libpng settings as TensorFlow's: the same pixels, and here the same bytes.
        assert single == tf.io.encode_png(image[0, 0]).numpy()


def test_uint16_is_refused_by_name():
    with pytest.raises(em.errors.UnimplementedError, match="uint16"):
        em.io.decode_png(PNGS["rgb16"], dtype="uint16")
    with pytest.raises(em.errors.UnimplementedError, match="uint16"):
        em.io.decode_image(PNGS["rgb16"], dtype="uint16")
    with pytest.raises(em.errors.InvalidArgumentError, match="DecodePng.*uint16"):
        em.raw_ops.DecodePng(contents=PNGS["rgb16"], dtype=em.float32)


# ---- GIF and BMP


def _gif(frames, **kwargs):
    out = io.BytesIO()
    frames[0].save(out, format="GIF", save_all=True, append_images=frames[1:], **kwargs)
    return out.getvalue()


def _gif_variants():
    rgb = [Image.fromarray(_smooth(10, 14, 3) // (k + 1)).convert("P", palette=Image.ADAPTIVE, colors=16)
           for k in range(4)]
    still = _gif(rgb[:1])
    animated = _gif(rgb, duration=50, loop=0)
    # Frames that cover part of the screen (Pillow writes only the changed box) and a transparent index.
    base = np.zeros((12, 12, 3), np.uint8)
    moving = []
    for k in range(3):
        frame = base.copy()
        frame[2 + k:6 + k, 3:9] = (200, 40 * k, 90)
        moving.append(Image.fromarray(frame).convert("P", palette=Image.ADAPTIVE, colors=4))
    partial = _gif(moving, duration=20, optimize=False)
    transparent = _gif(moving, duration=20, transparency=0, disposal=1)
    return {"still": still, "animated": animated, "partial": partial, "transparent": transparent,
            "interlaced": _gif(rgb[:2], interlace=True)}


GIFS = _gif_variants()


@pytest.mark.parametrize("name", sorted(GIFS))
def test_decode_gif_matches_tensorflow(name):
    contents = GIFS[name]
    _same(em.io.decode_gif(contents), tf.io.decode_gif(contents))
    _same(em.io.decode_image(contents), tf.io.decode_image(contents))
    _same(em.io.decode_image(contents, expand_animations=False), tf.io.decode_image(contents, expand_animations=False))
    if name == "still":
        _same(em.io.decode_jpeg(contents), tf.io.decode_jpeg(contents))
        _same(em.io.decode_png(contents), tf.io.decode_png(contents))
    else:
        for ours, theirs in ((em.io.decode_jpeg, tf.io.decode_jpeg), (em.io.decode_png, tf.io.decode_png)):
            with pytest.raises(em.errors.InvalidArgumentError, match="frames, but animated gifs"):
                ours(contents)
            with pytest.raises(tf.errors.InvalidArgumentError):
                theirs(contents)


@pytest.mark.parametrize("name", ["animated", "still", "interlaced"])
def test_truncated_gif_keeps_the_whole_frames_as_tensorflow(name):
    contents = GIFS[name]
    for cut in range(7, len(contents), 11):
        try:
            theirs = tf.io.decode_gif(contents[:cut]).numpy()
        except tf.errors.InvalidArgumentError:
            with pytest.raises(em.errors.InvalidArgumentError, match="DecodeGif: Invalid GIF data"):
                em.io.decode_gif(contents[:cut])
            continue
        np.testing.assert_array_equal(em.io.decode_gif(contents[:cut]).numpy(), theirs)


def _bmp_variants():
    return {"rgb": _pil_bytes(Image.fromarray(IMAGES["noise"]), "BMP"),
            "rgba": _pil_bytes(Image.fromarray(RNG.integers(0, 256, (5, 3, 4), dtype=np.uint8), "RGBA"), "BMP"),
            "gray": _pil_bytes(Image.fromarray(IMAGES["gray"][..., 0]), "BMP"),
            "odd_width": _pil_bytes(Image.fromarray(_smooth(4, 5, 3)), "BMP")}


BMPS = _bmp_variants()


@pytest.mark.parametrize("name", sorted(BMPS))
@pytest.mark.parametrize("channels", [0, 3, 4])
def test_decode_bmp_matches_tensorflow(name, channels):
    contents = BMPS[name]
    outcomes = []
    for fn in (lambda: em.io.decode_bmp(contents, channels=channels),
               lambda: tf.io.decode_bmp(contents, channels=channels)):
        try:
            outcomes.append(fn().numpy())
        except (em.errors.InvalidArgumentError, tf.errors.InvalidArgumentError) as e:
            outcomes.append(type(e).__name__)
    if isinstance(outcomes[1], str):
        assert outcomes[0] == outcomes[1]
    else:
        np.testing.assert_array_equal(outcomes[0], outcomes[1])
        _same(em.io.decode_image(contents, channels=channels), tf.io.decode_image(contents, channels=channels))


# ---- decode_image's dtypes and what each op accepts


@pytest.mark.parametrize("dtype", ["uint8", "float32", "float16", "float64", "int8", "int16", "int32", "int64"])
def test_decode_image_dtypes_match_tensorflow(dtype):
    for contents in (_jpeg("smooth"), PNGS["rgba"], PNGS["rgb16"], GIFS["animated"], BMPS["rgb"]):
        ours = em.io.decode_image(contents, dtype=getattr(em, dtype))
        theirs = tf.io.decode_image(contents, dtype=getattr(tf, dtype))
        assert ours.dtype.name == dtype and ours.shape == theirs.shape
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


ERROR_CASES = [
    ("DecodeJpeg", dict(contents=b""), "Input is empty"),
    ("DecodeJpeg", dict(contents=b"hello"), "Unknown image file format"),
    ("DecodeJpeg", dict(contents=b"\xff\xd8\xff\xe0garbage"), "Invalid JPEG data"),
    ("DecodeJpeg", dict(contents="jpeg", channels=2), "`channels` must be 0, 1, 3 or 4 but got 2"),
    ("DecodeJpeg", dict(contents="jpeg", channels=4), "JPEG does not support 4 channels"),
    ("DecodeJpeg", dict(contents="jpeg", ratio=3), "ratio must be 1, 2, 4, or 8, got 3"),
    ("DecodeJpeg", dict(contents="jpeg", dct_method="SLOW"), "dct_method must be one of"),
    ("DecodeJpeg", dict(contents="bmp"), "Trying to decode BMP format using a wrong op"),
    ("DecodeBmp", dict(contents="jpeg"), "Trying to decode JPEG format using DecodeBmp op"),
    ("DecodeBmp", dict(contents="png"), "Trying to decode PNG format using DecodeBmp op"),
    ("DecodeBmp", dict(contents="bmp", channels=1), "`channels` must be 0, 3 or 4 for BMP"),
    ("DecodeBmp", dict(contents="short_bmp"), "Input size should match"),
    ("DecodeAndCropJpeg", dict(contents="png", crop_window=[0, 0, 1, 1]), "can run on JPEG only, but detected PNG"),
    ("DecodeAndCropJpeg", dict(contents="jpeg", crop_window=[0, 0, 100, 1]), "Invalid JPEG data or crop window"),
    ("DecodeAndCropJpeg", dict(contents="jpeg", crop_window=[0, 0, 0, 1]), "Invalid JPEG data or crop window"),
    ("DecodePng", dict(contents="short_png"), "Invalid PNG data"),
    ("DecodePng", dict(contents=b"\x89PNG\r\n\x1a\nxxxx"), "Invalid PNG"),
    ("DecodeGif", dict(contents=b"GIF89a\x01"), "Invalid GIF data"),
    ("DecodeGif", dict(contents="short_gif"), "Invalid GIF data"),
    ("DecodeImage", dict(contents="gif", channels=1), "channels must be 0 or 3 for GIF, got 1"),
    ("ExtractJpegShape", dict(contents="png"), "Invalid JPEG data, size"),
    ("EncodeJpeg", dict(image="two_channels"), "image must have 1 or 3 channels"),
    ("EncodeJpeg", dict(image="rgb", quality=101), "quality must be in [0,100], got 101"),
    ("EncodeJpeg", dict(image="rgb", format="grayscale"), "format grayscale expects 1 channels"),
    ("EncodePng", dict(image="five_channels"), "image must have 1, 2, 3, or 4 channels, got 5"),
    ("EncodePng", dict(image="rgb", compression=10), "compression should be in [-1,9], got 10"),
]
SAMPLES = {"jpeg": _jpeg("smooth"), "png": PNGS["rgb"], "bmp": BMPS["rgb"], "gif": GIFS["animated"],
           "short_bmp": BMPS["rgb"][:-7], "short_png": PNGS["rgb"][:len(PNGS["rgb"]) // 2],
           "short_gif": GIFS["animated"][:30],
           "two_channels": np.zeros((2, 2, 2), np.uint8), "rgb": np.zeros((2, 2, 3), np.uint8),
           "five_channels": np.zeros((2, 2, 5), np.uint8)}


@pytest.mark.parametrize("op,kwargs,message", ERROR_CASES, ids=[f"{c[0]}-{c[2][:24]}" for c in ERROR_CASES])
def test_errors_name_the_op_as_tensorflow_raises_them(op, kwargs, message):
    kwargs = {k: SAMPLES.get(v, v) if isinstance(v, str) else v for k, v in kwargs.items()}
    with pytest.raises(tf.errors.InvalidArgumentError):
        getattr(tf.raw_ops, op)(**kwargs)
    with pytest.raises(em.errors.InvalidArgumentError) as raised:
        getattr(em.raw_ops, op)(**kwargs)
    assert op in str(raised.value) and message in str(raised.value)


def _png_chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _huge_files():
    """Valid headers claiming 100000 x 100000 pixels (65500 x 65500 for JPEG, 65535 for GIF: their limits)."""
    png = b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", struct.pack(">IIBBBBB", 100000, 100000, 8, 2, 0, 0, 0))
    png += _png_chunk(b"IDAT", zlib.compress(b"\x00" * 1000)) + _png_chunk(b"IEND", b"")
    jpeg = bytearray(tf.io.encode_jpeg(IMAGES["tiny"]).numpy())
    sof = jpeg.index(b"\xff\xc0")
    jpeg[sof + 5:sof + 9] = struct.pack(">HH", 65500, 65500)
    progressive = bytearray(tf.io.encode_jpeg(IMAGES["tiny"], progressive=True).numpy())
    sof = progressive.index(b"\xff\xc2")
    progressive[sof + 5:sof + 9] = struct.pack(">HH", 65500, 65500)
    gif = bytearray(GIFS["still"])
    gif[6:10] = struct.pack("<HH", 65535, 65535)
    descriptor = gif.index(b"\x2c")
    gif[descriptor + 5:descriptor + 9] = struct.pack("<HH", 65535, 65535)
    bmp = bytearray(BMPS["rgb"])
    bmp[18:26] = struct.pack("<ii", 100000, 100000)
    return {"png": bytes(png), "jpeg": bytes(jpeg), "progressive_jpeg": bytes(progressive), "gif": bytes(gif),
            "bmp": bytes(bmp)}


@pytest.mark.parametrize("name", sorted(_huge_files()))
def test_huge_dimensions_are_refused_without_allocating(name):
    contents = _huge_files()[name]
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    decoders = [em.io.decode_image] if name == "bmp" else [em.io.decode_image, em.io.decode_gif, em.io.decode_png]
    for decode in decoders:
        with pytest.raises(em.errors.InvalidArgumentError, match="Decode"):
            decode(contents)
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.io.decode_image(contents)
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mib < 256, f"decoding a hostile {name} header grew the process by {grown_mib:.0f} MiB"


# ---- in functions and datasets


def test_shapes_traced_and_in_a_dataset(tmp_path):
    contents = _jpeg("smooth")
    decode = em.function(lambda c: em.io.decode_jpeg(c, channels=3))
    graph = decode.get_concrete_function(em.TensorSpec([], em.string)).structured_outputs
    assert graph.shape.as_list() == [None, None, 3]
    np.testing.assert_array_equal(decode(em.constant(contents)).numpy(), tf.io.decode_jpeg(contents, channels=3).numpy())
    gif = em.function(lambda c: em.io.decode_gif(c)).get_concrete_function(em.TensorSpec([], em.string))
    assert gif.structured_outputs.shape.as_list() == [None, None, None, 3]
    paths = []
    for i, name in enumerate(["smooth", "noise", "gray"]):
        paths.append(str(tmp_path / f"{i}.jpg"))
        (tmp_path / f"{i}.jpg").write_bytes(_jpeg(name))
    ours = em.data.Dataset.from_tensor_slices(paths).map(
        lambda p: em.image.resize(em.io.decode_jpeg(em.io.read_file(p), channels=3), [8, 8]))
    theirs = tf.data.Dataset.from_tensor_slices(paths).map(
        lambda p: tf.image.resize(tf.io.decode_jpeg(tf.io.read_file(p), channels=3), [8, 8]))
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=0, atol=1e-4)
