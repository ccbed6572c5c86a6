"""tf.io.decode_raw (DecodeRaw, DecodePaddedRaw), encode_base64 and decode_base64 (src/ember/ops/strings_bytes.cc)
against TensorFlow 2.21: values, dtypes, shapes and errors, eagerly and in ember.function, a TFRecord pipeline
that unpacks raw bytes, and a GraphDef that TensorFlow imports and runs."""

import numpy as np
import pytest
import tensorflow

import ember

CASES = [
    lambda m: m.io.decode_raw([b"\x01\x02\x03\x04", b"\x05\x06\x07\x08"], m.int16),
    lambda m: m.io.decode_raw([b"\x01\x02\x03\x04", b"\x05\x06\x07\x08"], m.int16, little_endian=False),
    lambda m: m.io.decode_raw(b"\x01\x02\x03\x04", m.uint8),
    lambda m: m.io.decode_raw(m.constant([[b"ab", b"cd"]]), m.uint8),
    lambda m: m.io.decode_raw(m.constant([], m.string), m.float32),
    lambda m: m.io.decode_raw([b"", b""], m.float32),
    lambda m: m.io.decode_raw([b"\x00\x00\x80\x3f"], m.float32),
    lambda m: m.io.decode_raw([b"\x3f\x80\x00\x00"], m.float32, little_endian=False),
    lambda m: m.io.decode_raw([b"\x00\x00\x80\x3f"], m.bool),
    lambda m: m.io.decode_raw([b"\x00\x00\x80\x3f\x00\x00\x00\x40"], m.complex64),
    lambda m: m.io.decode_raw([b"\x3f\x80\x00\x00\x40\x00\x00\x00"], m.complex64, little_endian=False),
    lambda m: m.io.decode_raw([bytes(range(16))], m.complex128, little_endian=False),
    lambda m: m.io.decode_raw([b"\x01\x02\x03\x04\x05\x06\x07\x08"], m.int64, little_endian=False),
    lambda m: m.io.decode_raw([b"\x01\x02\x03\x04\x05\x06\x07\x08"], m.float64),
    lambda m: m.io.decode_raw([b"\x01\x02", b"\xff\x7b"], m.float16),
    lambda m: m.io.decode_raw([b"\x01\x02"], m.bfloat16, little_endian=False),
    lambda m: m.io.decode_raw([b"\xff\x80"], m.int8),
    lambda m: m.io.decode_raw([b"abc", b"a"], m.uint8, fixed_length=4),
    lambda m: m.io.decode_raw([b"abcdef", b"a"], m.int16, fixed_length=4),
    lambda m: m.io.decode_raw([b"abcdef", b"a"], m.int16, fixed_length=4, little_endian=False),
    lambda m: m.io.decode_raw(m.constant([[b"abcdef"]]), m.int16, fixed_length=4),
    lambda m: m.io.decode_raw([b"abcdefg"], m.int32, fixed_length=8, little_endian=False),
    lambda m: m.io.decode_raw([b"ab"], m.float32, fixed_length=m.constant(8)),
    lambda m: m.io.encode_base64([b"hello?>", b""]),
    lambda m: m.io.encode_base64([b"hello?>", b"a", b"ab", b"abc", b"\xff\xfe"], pad=True),
    lambda m: m.io.encode_base64(m.constant([[b"x"]])),
    lambda m: m.io.decode_base64([b"aGVsbG8_Pg", b"YQ==", b"YQ", b"YWI=", b"YWI", b"", b"YR", b"YWJjZA"]),
    lambda m: m.io.decode_base64(m.io.encode_base64([bytes(range(256)), bytes(range(255, 0, -3))])),
    lambda m: m.compat.v1.decode_raw(bytes=[b"\x01\x02"], out_type=m.uint8),
    lambda m: m.compat.v1.io.decode_raw([b"\x01\x02"], m.int16),
]
ERRORS = [
    lambda m: m.io.decode_raw([b"abc", b"ab"], m.uint8),
    lambda m: m.io.decode_raw([b"abc"], m.int16),
    lambda m: m.io.decode_raw([b"abcdef", b"a"], m.int16, fixed_length=3),
    lambda m: m.io.decode_raw([b"abcd"], m.int8, fixed_length=-1),
    lambda m: m.io.decode_raw([b"abcd"], m.int8, fixed_length=0),
    lambda m: m.io.decode_raw([b"ab"], m.string),
    lambda m: m.io.decode_base64([b"aGVsbG8/Pg"]),
    lambda m: m.io.decode_base64([b"a"]),
    lambda m: m.io.decode_base64([b"YQ="]),
    lambda m: m.io.decode_base64([b"===="]),
    lambda m: m.io.decode_base64([b"YWI=="]),
    lambda m: m.io.decode_base64([b"YWIj="]),
    lambda m: m.io.decode_base64([b"\n"]),
    lambda m: m.io.decode_base64([b"YW=j"]),
]


def _value(t):
    return t.dtype.name, tuple(t.shape), t.numpy().tolist()


@pytest.mark.parametrize("index", range(len(CASES)))
def test_matches_tensorflow(index):
    ours, theirs = CASES[index](ember), CASES[index](tensorflow)
    assert _value(ours) == _value(theirs)


@pytest.mark.parametrize("index", range(len(CASES)))
def test_in_a_function_matches_eager(index):
    eager = CASES[index](ember)
    staged = ember.function(lambda: CASES[index](ember))()
    assert _value(staged) == _value(eager)


@pytest.mark.parametrize("index", range(len(ERRORS)))
def test_bad_input_raises_as_tensorflow(index):
    with pytest.raises(tensorflow.errors.InvalidArgumentError) as theirs:
        ERRORS[index](tensorflow)
    with pytest.raises(ember.errors.InvalidArgumentError) as ours:
        ERRORS[index](ember)
    message = str(theirs.value).split("}}")[-1].split(" [Op:")[0].strip()
    if "not in the list of allowed values" in str(theirs.value):
        assert "out_type must be one of" in str(ours.value)
    else:
        assert message in str(ours.value)


def test_traced_argument_of_unknown_strings():
    @ember.function(input_signature=[ember.TensorSpec([None], ember.string)])
    def unpack(records):
        return ember.io.decode_raw(records, ember.float32), ember.io.decode_raw(records, ember.uint8, fixed_length=6)

    floats, padded = unpack(ember.constant([np.float32([1.5, -2]).tobytes(), np.float32([3, 4]).tobytes()]))
    assert floats.numpy().tolist() == [[1.5, -2.0], [3.0, 4.0]]
    assert padded.shape == (2, 6)
    assert unpack.get_concrete_function().structured_outputs[1].shape.as_list() == [None, 6]
    with pytest.raises(ember.errors.InvalidArgumentError, match="same size"):
        unpack(ember.constant([b"abcd", b"ab"]))


def test_tfrecord_pipeline_of_raw_image_bytes(tmp_path):
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(5, 4, 3, 2), dtype=np.uint8)
    path = str(tmp_path / "images.tfrecord")
    with tensorflow.io.TFRecordWriter(path) as writer:
        for i, image in enumerate(images):
            features = {"raw": tensorflow.train.Feature(bytes_list=tensorflow.train.BytesList(value=[image.tobytes()])),
                        "label": tensorflow.train.Feature(int64_list=tensorflow.train.Int64List(value=[i]))}
            writer.write(tensorflow.train.Example(features=tensorflow.train.Features(feature=features))
                         .SerializeToString())

    def pipeline(tf):
        spec = {"raw": tf.io.FixedLenFeature([], tf.string), "label": tf.io.FixedLenFeature([], tf.int64)}

        def parse(record):
            example = tf.io.parse_single_example(record, spec)
            image = tf.reshape(tf.io.decode_raw(example["raw"], tf.uint8), [4, 3, 2])
            return tf.cast(image, tf.float32) / 255.0, example["label"]

        return [(x.numpy(), y.numpy()) for x, y in tf.data.TFRecordDataset(path).map(parse).batch(2)]

    ours, theirs = pipeline(ember), pipeline(tensorflow)
    assert len(ours) == len(theirs) == 3
    for (x, y), (tx, ty) in zip(ours, theirs):
        np.testing.assert_array_equal(x, tx)
        np.testing.assert_array_equal(y, ty)


def test_graph_def_runs_in_tensorflow():
    @ember.function
    def f(records):
        return (ember.io.decode_raw(records, ember.int16, little_endian=False),
                ember.io.decode_raw(records, ember.uint8, fixed_length=3),
                ember.io.decode_base64(ember.io.encode_base64(records, pad=True)))

    graph = f.get_concrete_function(ember.TensorSpec([2], ember.string)).graph
    graph_def = tensorflow.compat.v1.GraphDef.FromString(graph.as_graph_def().SerializeToString())
    ops = {n.op for n in graph_def.node}
    assert {"DecodeRaw", "DecodePaddedRaw", "EncodeBase64", "DecodeBase64"} <= ops
    records = [b"\x01\x02\x03\x04", b"\xff\xfe\xfd\xfc"]
    with tensorflow.Graph().as_default() as g:
        tensorflow.graph_util.import_graph_def(graph_def, name="")
        with tensorflow.compat.v1.Session(graph=g) as session:
            got = session.run([t.name for t in graph.outputs], {graph.inputs[0].name: records})
    for theirs, ours in zip(got, f(ember.constant(records))):
        assert np.asarray(theirs).tolist() == ours.numpy().tolist()
