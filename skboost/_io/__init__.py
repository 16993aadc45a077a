"""Model files: skboost's versioned JSON / UBJSON format, validated on
reading (``model_file``, ``validation``, ``ubjson``), and a ``Booster``'s own
``save_model`` / ``load_model`` (``booster_files``)."""
