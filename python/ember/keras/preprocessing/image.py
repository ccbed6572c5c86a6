"""``ember.keras.preprocessing.image``: the image file helpers under Keras 2's older names
(``keras/utils/image_utils.py``)."""

from ember.keras.utils.image_utils import array_to_img, img_to_array, load_img, save_img, smart_resize  # noqa: F401
