"""LightGBM's text model files read as skboost models (see
``model_from_lightgbm``)."""

from .validation import ModelFileError as _Invalid


def is_lightgbm_text(data):
    """Whether a model file's content is LightGBM's text format."""
    head = data[:64] if isinstance(data, (bytes, str)) else b""
    if isinstance(head, str):
        head = head.encode("utf-8", "replace")
    return head.lstrip().startswith(b"tree\n") or head.lstrip().startswith(
        b"tree\r\n")


def model_from_lightgbm(text):
    raise _Invalid("LightGBM model files are not read yet")
