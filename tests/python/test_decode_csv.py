"""DecodeCSV (src/ember/ops/decode_csv.cc, tf.io.decode_csv) against TensorFlow 2.21 on random records:
quoted fields (with delimiters and doubled quotes inside), empty fields, na_value, select_cols, every
output dtype; bad records raise InvalidArgumentError with TensorFlow's message; eager and ember.function
agree; a traced function using decode_csv exports to a GraphDef that TensorFlow runs."""
import numpy as np
import pytest
import tensorflow as tf

import ember as em

DTYPES = ["int32", "int64", "float32", "float64", "string"]


def _field(rng, dtype, delim, na_value):
    r = rng.random()
    if r < 0.1:
        return ""
    if r < 0.15 and na_value:
        return na_value
    if dtype == "int32":
        text = str(int(rng.integers(-2**31, 2**31)))
    elif dtype == "int64":
        text = str(int(rng.integers(-2**63, 2**63, dtype=np.int64)))
    elif dtype in ("float32", "float64"):
        text = rng.choice([repr(float(rng.standard_normal() * 10.0 ** rng.integers(-5, 5))), "inf", "-inf",
                           " 1.5 ", "1e5", ".25", "7"])
    else:
        text = "".join(rng.choice(list("ab c") + [delim, '"'], size=rng.integers(0, 5)))
        if '"' in text or delim in text or rng.random() < 0.2:
            return '"' + text.replace('"', '""') + '"'
    if rng.random() < 0.2:
        return '"' + text + '"'  # quoted numbers are numbers too
    return text


def _case(seed):
    rng = np.random.default_rng(seed)
    delim = str(rng.choice([",", ";", "\t", "|"]))
    na_value = str(rng.choice(["", "NA", "?"]))
    width = int(rng.integers(1, 6))
    types = [str(rng.choice(DTYPES)) for _ in range(width)]
    select = None
    if rng.random() < 0.4:
        select = sorted(rng.choice(width, size=int(rng.integers(1, width + 1)), replace=False).tolist())
    chosen = select if select is not None else list(range(width))
    records = [delim.join(_field(rng, types[c], delim, na_value) for c in range(width)) or '""'
               for _ in range(int(rng.integers(1, 8)))]  # an empty record has no fields at all
    shape = [len(records)] if rng.random() < 0.7 else [1, len(records)]

    def defaults(m):
        out = []
        for c in chosen:
            value = {"string": "dflt"}.get(types[c], 7)
            out.append(m.constant([value], getattr(m, types[c])))
        return out

    kwargs = dict(field_delim=delim, na_value=na_value, select_cols=select)
    return np.array(records, dtype=object).reshape(shape), defaults, kwargs


def _same(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype.name == w.dtype.name and list(g.shape) == list(w.shape)
        if w.dtype == tf.string:
            assert g.numpy().tolist() == w.numpy().tolist()
        else:
            np.testing.assert_array_equal(g.numpy(), w.numpy())


@pytest.mark.parametrize("seed", range(40))
def test_random_records_match_tensorflow_eager_and_traced(seed):
    records, defaults, kwargs = _case(seed)
    want = tf.io.decode_csv(records.tolist(), defaults(tf), **kwargs)
    _same(em.io.decode_csv(records.tolist(), defaults(em), **kwargs), want)
    traced = em.function(lambda r: em.io.decode_csv(r, defaults(em), **kwargs))
    _same(traced(em.constant(records.tolist())), want)


BAD = [
    (["1,2,3"], [[0], [0]], {}),
    (["1"], [[0], [0]], {}),
    ([""], [[""]], {}),
    (["x"], [[0]], {}),
    (["1.5"], [[0]], {}),
    (["2147483648"], [[0]], {}),
    (["9223372036854775808"], [tf.int64], {}),
    (["1e"], [[0.0]], {}),
    (['"a'], [[""]], {}),
    (['a"b'], [[""]], {}),
    (['"a"b,1'], [[""], [0]], {}),
    (["1,"], [[0], "required"], {}),
    (["NA,1"], [[0], "required"], {"select_cols": [0, 1], "na_value": "1"}),
    (["1,2"], [[0], [0]], {"select_cols": [0, 5]}),
    (["1,2,3"], [[0], [0], [0]], {"select_cols": [0, 2, 5]}),
    (["a\nb"], [[""]], {}),
    (["a\rb"], [[""]], {"use_quote_delim": False}),
    (["1,2"], [[0], [0]], {"select_cols": [1, 0]}),
    (["1,2"], [[0]], {"select_cols": [-1]}),
    (["1,2"], [[0], [0]], {"field_delim": "ab"}),
    (["1,2"], [[0], [0, 1]], {}),
]


def _defaults(m, spec):
    out = []
    for d in spec:
        if d == "required":
            out.append(m.constant([], m.int32))
        elif d is tf.int64:
            out.append(m.constant([], m.int64))
        else:
            out.append(m.constant(d))
    return out


@pytest.mark.parametrize("records,defaults,kwargs", BAD)
def test_bad_records_raise_tensorflows_message(records, defaults, kwargs):
    with pytest.raises(tf.errors.InvalidArgumentError) as theirs:
        tf.raw_ops.DecodeCSV(records=records, record_defaults=_defaults(tf, defaults), **kwargs)
    message = str(theirs.value).split("}}")[-1].split(" [Op:")[0].strip()
    op = em._C.op("DecodeCSV")
    attrs = [[d.dtype for d in _defaults(em, defaults)], kwargs.get("field_delim", ","),
             kwargs.get("use_quote_delim", True),
             kwargs.get("na_value", ""), kwargs.get("select_cols", [])]
    for run in (lambda: op(records, _defaults(em, defaults), *attrs),
                em.function(lambda: op(records, _defaults(em, defaults), *attrs))):
        with pytest.raises(em.errors.InvalidArgumentError, match="DecodeCSV") as ours:
            run()
        assert message in str(ours.value)


def test_unquoted_mode_keeps_quotes_as_text():
    args = (['x,"a"', 'b""c,d'], [[""], [""]])
    _same(em.io.decode_csv(*args, use_quote_delim=False), tf.io.decode_csv(*args, use_quote_delim=False))


def test_graph_def_with_decode_csv_runs_in_tensorflow():
    from test_graph_def_tf import run_in_tensorflow

    @em.function
    def parse(lines):
        ids, names, scores = em.io.decode_csv(lines, [[0], ["?"], [0.5]], na_value="NA")
        return ids * 2, names, scores

    lines = ["1,a,2.5", '2,"b,""c""",NA', "3,,4"]
    graph = parse.get_concrete_function(em.TensorSpec([None], em.string)).graph
    gd = graph.as_graph_def()
    assert "DecodeCSV" in [n.op for n in gd.node] + [n.op for f in gd.library.function for n in f.node_def]
    assert "PyFunc" not in [n.op for n in gd.node]
    got = run_in_tensorflow(gd.SerializeToString(), [t.name for t in graph.inputs],
                            [t.name for t in graph.outputs], tf.constant(lines))
    want = parse(em.constant(lines))
    for g, w in zip(got, want):
        assert g.numpy().tolist() == w.numpy().tolist()


def test_saved_model_with_decode_csv_and_sets_loads_in_tensorflow(tmp_path):
    module = em.Module()

    @em.function(input_signature=[em.TensorSpec([None], em.string)])
    def parse(lines):
        ids, left, right = em.io.decode_csv(lines, [[0], [""], [""]], field_delim="|")
        common = em.sets.intersection(em.strings.split(left, " ").to_sparse(),
                                      em.strings.split(right, " ").to_sparse())
        return {"ids": ids + 1, "common": common.values, "shape": common.dense_shape}

    module.parse = parse
    em.saved_model.save(module, str(tmp_path / "m"), signatures=parse)
    lines = ['1|a b c|c a', '2|"x ""y"""|z', '|q|q q']
    served = tf.saved_model.load(str(tmp_path / "m")).signatures["serving_default"]
    got = served(lines=tf.constant(lines))
    want = parse(em.constant(lines))
    assert sorted(got) == sorted(want)
    for key in want:
        assert got[key].numpy().tolist() == want[key].numpy().tolist()
