"""``keras.preprocessing.text``: ``Tokenizer`` (a word index from texts; texts to index sequences or to
bag-of-words matrices), ``text_to_word_sequence``, ``one_hot`` and ``hashing_trick``, as Keras 2's."""

import collections
import hashlib
import json

import numpy as np

_DEFAULT_FILTERS = '!"#$%&()*+,-./:;<=>?@[\\]^_`{|}~\t\n'


def text_to_word_sequence(input_text, filters=_DEFAULT_FILTERS, lower=True, split=" "):
    """The words of a text: lowercased, each filtered character turned into ``split``, empty words dropped."""
    if lower:
        input_text = input_text.lower()
    input_text = input_text.translate(str.maketrans({c: split for c in filters}))
    return [w for w in input_text.split(split) if w]


def hashing_trick(text, n, hash_function=None, filters=_DEFAULT_FILTERS, lower=True, split=" ",
                  analyzer=None):
    """Each word of the text hashed to an index in [1, n) (0 is kept for padding). ``hash_function`` is
    Python's ``hash`` by default (not stable across runs), or ``"md5"`` for a stable one."""
    if hash_function is None:
        hash_function = hash
    elif hash_function == "md5":
        def hash_function(w):
            return int(hashlib.md5(w.encode()).hexdigest(), 16)
    words = text_to_word_sequence(text, filters, lower, split) if analyzer is None else analyzer(text)
    return [(hash_function(w) % (n - 1) + 1) for w in words]


def one_hot(input_text, n, filters=_DEFAULT_FILTERS, lower=True, split=" ", analyzer=None):
    """``hashing_trick`` with Python's hash: word indices in [1, n)."""
    return hashing_trick(input_text, n, hash_function=hash, filters=filters, lower=lower, split=split,
                         analyzer=analyzer)


class Tokenizer:
    """A vocabulary built by ``fit_on_texts`` (words ranked by count, most frequent = 1; ``oov_token`` takes
    index 1 when given), then ``texts_to_sequences`` keeps the ``num_words - 1`` most frequent words."""

    def __init__(self, num_words=None, filters=_DEFAULT_FILTERS, lower=True, split=" ", char_level=False,
                 oov_token=None, analyzer=None, document_count=0, **kwargs):
        if kwargs:
            raise TypeError(f"Unrecognized keyword arguments: {kwargs}")
        self.word_counts = collections.OrderedDict()
        self.word_docs = collections.defaultdict(int)
        self.filters, self.split, self.lower = filters, split, lower
        self.num_words, self.char_level, self.oov_token = num_words, char_level, oov_token
        self.document_count = document_count
        self.analyzer = analyzer
        self.index_docs = collections.defaultdict(int)
        self.word_index = {}
        self.index_word = {}

    def _words(self, text):
        if self.char_level or isinstance(text, list):
            if self.lower:
                text = [t.lower() for t in text] if isinstance(text, list) else text.lower()
            return list(text)
        if self.analyzer is not None:
            return self.analyzer(text)
        return text_to_word_sequence(text, self.filters, self.lower, self.split)

    def fit_on_texts(self, texts):
        for text in texts:
            self.document_count += 1
            words = self._words(text)
            for w in words:
                self.word_counts[w] = self.word_counts.get(w, 0) + 1
            for w in set(words):
                self.word_docs[w] += 1
        ranked = sorted(self.word_counts.items(), key=lambda item: item[1], reverse=True)  # stable: ties by order
        vocabulary = ([self.oov_token] if self.oov_token is not None else []) + [w for w, _ in ranked]
        self.word_index = {w: i for i, w in enumerate(vocabulary, start=1)}
        self.index_word = {i: w for w, i in self.word_index.items()}
        for w, c in self.word_docs.items():
            self.index_docs[self.word_index[w]] = c

    def fit_on_sequences(self, sequences):
        self.document_count += len(sequences)
        for seq in sequences:
            for i in set(seq):
                self.index_docs[i] += 1

    def _keeps(self, index):
        return not self.num_words or index < self.num_words

    def texts_to_sequences(self, texts):
        return list(self.texts_to_sequences_generator(texts))

    def texts_to_sequences_generator(self, texts):
        oov = self.word_index.get(self.oov_token) if self.oov_token is not None else None
        for text in texts:
            seq = []
            for w in self._words(text):
                i = self.word_index.get(w)
                if i is not None and self._keeps(i):
                    seq.append(i)
                elif oov is not None:
                    seq.append(oov)
            yield seq

    def sequences_to_texts(self, sequences):
        return list(self.sequences_to_texts_generator(sequences))

    def sequences_to_texts_generator(self, sequences):
        oov = self.word_index.get(self.oov_token) if self.oov_token is not None else None
        for seq in sequences:
            words = []
            for i in seq:
                word = self.index_word.get(i)
                if word is not None and self._keeps(i):
                    words.append(word)
                elif oov is not None:
                    words.append(self.index_word[oov])
            yield " ".join(words)

    def texts_to_matrix(self, texts, mode="binary"):
        return self.sequences_to_matrix(self.texts_to_sequences(texts), mode=mode)

    def sequences_to_matrix(self, sequences, mode="binary"):
        """[len(sequences), num_words]: per sequence, each index's ``binary`` presence, ``count``, ``freq``
        (count / length) or ``tfidf`` ((1 + log count) * log(1 + documents / (1 + documents with it)))."""
        if not self.num_words:
            if not self.word_index:
                raise ValueError("Specify a dimension (`num_words` argument), or fit on some text data first.")
            width = len(self.word_index) + 1
        else:
            width = self.num_words
        if mode == "tfidf" and not self.document_count:
            raise ValueError("Fit the Tokenizer on some data before using tfidf mode.")
        if mode not in ("binary", "count", "tfidf", "freq"):
            raise ValueError(f"Unknown vectorization mode: {mode}")
        matrix = np.zeros((len(sequences), width))
        for row, seq in enumerate(sequences):
            if not seq:
                continue
            counts = collections.Counter(i for i in seq if i < width)
            for i, c in counts.items():
                if mode == "count":
                    matrix[row, i] = c
                elif mode == "freq":
                    matrix[row, i] = c / len(seq)
                elif mode == "binary":
                    matrix[row, i] = 1
                else:
                    tf_part = 1 + np.log(c)
                    idf = np.log(1 + self.document_count / (1 + self.index_docs.get(i, 0)))
                    matrix[row, i] = tf_part * idf
        return matrix

    def get_config(self):
        return {"num_words": self.num_words, "filters": self.filters, "lower": self.lower, "split": self.split,
                "char_level": self.char_level, "oov_token": self.oov_token, "document_count": self.document_count,
                "word_counts": json.dumps(self.word_counts), "word_docs": json.dumps(self.word_docs),
                "index_docs": json.dumps(self.index_docs), "index_word": json.dumps(self.index_word),
                "word_index": json.dumps(self.word_index)}

    def to_json(self, **kwargs):
        return json.dumps({"class_name": type(self).__name__, "config": self.get_config()}, **kwargs)


def tokenizer_from_json(json_string):
    config = json.loads(json_string).get("config")
    tables = {k: json.loads(config.pop(k)) for k in ("word_counts", "word_docs", "index_docs", "word_index",
                                                      "index_word")}
    tokenizer = Tokenizer(**config)
    tokenizer.word_counts = collections.OrderedDict(tables["word_counts"])
    tokenizer.word_docs = collections.defaultdict(int, tables["word_docs"])
    tokenizer.index_docs = collections.defaultdict(int, {int(k): v for k, v in tables["index_docs"].items()})
    tokenizer.word_index = tables["word_index"]
    tokenizer.index_word = {int(k): v for k, v in tables["index_word"].items()}
    return tokenizer
