"""The order of the example gallery: a newcomer's path first (quick start,
pandas, evaluation, the kinds of input), then the tasks and tools, then the
algorithm's trade-offs; any other example follows in alphabetical order.

``sphinx_gallery_conf["within_subsection_order"]`` names this class."""

READING_ORDER = [
    "quickstart.py",
    "pandas_workflow.py",
    "early_stopping.py",
    "sparse_data.py",
    "categorical_data.py",
    "ranking.py",
    "monotone_constraints.py",
    "multi_output.py",
    "uncertainty.py",
    "explain_shap.py",
    "deploy_onnx.py",
    "models_from_xgboost.py",
    "approx_proposals.py",
    "tree_methods.py",
]


class GalleryOrder:
    """Sort key of an example's file name (sphinx-gallery calls it with
    the file name; the class is built with the examples' folder)."""

    def __init__(self, src_dir):
        self.src_dir = src_dir

    def __call__(self, filename):
        if filename in READING_ORDER:
            return (0, READING_ORDER.index(filename), filename)
        return (1, 0, filename)

    def __repr__(self):
        # sphinx-gallery puts the repr into its cache key
        return f"<{type(self).__name__}>"
