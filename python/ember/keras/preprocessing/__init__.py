"""``ember.keras.preprocessing``: Keras 2's text and sequence preprocessing (``text.Tokenizer``,
``sequence.pad_sequences``), its image file helpers (``image.load_img``, ...) and the dataset makers it
re-exports."""

from ember.keras.preprocessing import image, sequence, text  # noqa: F401
from ember.keras.utils.image_utils import image_dataset_from_directory  # noqa: F401
from ember.keras.utils.data_utils import text_dataset_from_directory, timeseries_dataset_from_array  # noqa: F401
