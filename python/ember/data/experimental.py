"""tf.data.experimental: the constants and helpers TensorFlow 2 code still reaches through it."""

from ember.data.dataset_ops import AUTOTUNE  # noqa: F401
from ember.data.dataset_ops import INFINITE as INFINITE_CARDINALITY  # noqa: F401
from ember.data.dataset_ops import UNKNOWN as UNKNOWN_CARDINALITY  # noqa: F401


def cardinality(dataset):
    return dataset.cardinality()


def sample_from_datasets(datasets, weights=None, seed=None, stop_on_empty_dataset=False):
    from ember.data.dataset_ops import Dataset
    return Dataset.sample_from_datasets(datasets, weights, seed, stop_on_empty_dataset)


def choose_from_datasets(datasets, choice_dataset, stop_on_empty_dataset=True):
    from ember.data.dataset_ops import Dataset
    return Dataset.choose_from_datasets(datasets, choice_dataset, stop_on_empty_dataset)


def get_single_element(dataset):
    return dataset.get_single_element()


def _transformation(method):
    """tf.data.experimental's form of a Dataset method: a function of the dataset, for ``apply``."""
    def make(*args, **kwargs):
        return lambda dataset: getattr(dataset, method)(*args, **kwargs)
    make.__name__ = method
    return make


scan = _transformation("scan")
unique = _transformation("unique")
take_while = _transformation("take_while")
group_by_window = _transformation("group_by_window")
bucket_by_sequence_length = _transformation("bucket_by_sequence_length")
dense_to_ragged_batch = _transformation("ragged_batch")  # TensorFlow's older name for it


def Counter(start=0, step=1, dtype=None):  # noqa: N802 - TensorFlow's name
    from ember.data.dataset_ops import Dataset
    return Dataset.counter(start, step) if dtype is None else Dataset.counter(start, step, dtype)



# ---- CSV files (data/csv.py) and the transformations of data/experimental_ops.py
from ember.data.csv import CsvDataset, make_csv_dataset  # noqa: E402,F401
from ember.data.experimental_ops import Reducer  # noqa: E402,F401


def from_list(elements, name=None):
    from ember.data.experimental_ops import FromListDataset
    return FromListDataset(elements)


def assert_cardinality(expected_cardinality):
    from ember.data.experimental_ops import AssertCardinalityDataset
    return lambda dataset: AssertCardinalityDataset(dataset, expected_cardinality)


def ignore_errors(log_warning=False):
    return lambda dataset: dataset.ignore_errors(log_warning)


def enumerate_dataset(start=0):
    return lambda dataset: dataset.enumerate(start)


def unbatch():
    return lambda dataset: dataset.unbatch()


def get_structure(dataset_or_iterator):
    """The element spec of a dataset or an iterator (TypeError for anything else, as TensorFlow)."""
    spec = getattr(dataset_or_iterator, "element_spec", None)
    if spec is None:
        raise TypeError("Invalid `dataset_or_iterator`. `dataset_or_iterator` must be a `tf.data.Dataset` or "
                        f"tf.data.Iterator object, but got {type(dataset_or_iterator)}.")
    return spec


def group_by_reducer(key_func, reducer):
    from ember.data.experimental_ops import GroupByReducerDataset
    return lambda dataset: GroupByReducerDataset(dataset, key_func, reducer)


def rejection_resample(class_func, target_dist, initial_dist=None, seed=None):
    return lambda dataset: dataset.rejection_resample(class_func, target_dist, initial_dist, seed)


def at(dataset, index):
    from ember.data.experimental_ops import at as _at
    return _at(dataset, index)


def save(dataset, path, compression=None, shard_func=None, checkpoint_args=None):
    """``tf.data.experimental.save``: ``dataset.save(path, ...)``."""
    return dataset.save(path, compression, shard_func, checkpoint_args)


def load(path, element_spec=None, compression=None, reader_func=None):
    """``tf.data.experimental.load``: ``tf.data.Dataset.load(path, ...)``."""
    from ember.data.dataset_ops import Dataset
    return Dataset.load(path, element_spec, compression, reader_func)
