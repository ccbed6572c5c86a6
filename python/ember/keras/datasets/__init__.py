"""``ember.keras.datasets``: Keras 2's small datasets, read from the files Keras caches.

No network is reached: each ``load_data()`` reads the file tf_keras would have downloaded, under the same name
and in the same format, from ``<cache root>/datasets/`` (the root is ``cache_dir``, else ``$KERAS_HOME``, else
``~/.keras``), and returns what tf_keras returns for it. A missing file raises ``FileNotFoundError`` naming the
URL to fetch it from and the path it was looked for at (see ``_cache.cached_path``).
"""

from ember.keras.datasets import boston_housing, cifar10, cifar100, fashion_mnist, imdb, mnist, reuters  # noqa: F401
