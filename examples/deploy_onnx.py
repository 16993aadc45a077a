"""
Deploying a model: ONNX and Treelite
====================================

A skboost model exported to ONNX alone, a whole scikit-learn pipeline
converted through skl2onnx, and the model built in Treelite; each checked
against skboost's own predictions.

Needs ``pip install skboost[onnx,treelite]``. Run from the project root:
``python examples/deploy_onnx.py [OUTPUT_DIR]`` (the .onnx files are
written there, a temporary directory by default).
"""

import sys
import tempfile
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pandas as pd
import skl2onnx
import treelite
from skl2onnx.common.data_types import FloatTensorType, StringTensorType
from sklearn.compose import ColumnTransformer
from sklearn.datasets import load_breast_cancer
from sklearn.impute import SimpleImputer
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OrdinalEncoder

from skboost import BoostClassifier
from skboost.onnx import to_onnx   # also registers skboost with skl2onnx
from skboost.treelite import to_treelite


def run_onnx(path, **inputs):
    session = ort.InferenceSession(str(path),
                                   providers=["CPUExecutionProvider"])
    return session.run(None, inputs)


def one_estimator(out_dir):
    X, y = load_breast_cancer(return_X_y=True)
    labels = np.where(y == 1, "benign", "malignant")
    X_train, X_test, y_train, _ = train_test_split(
        X.astype(np.float32), labels, random_state=0)
    X_test[::7, 3] = np.nan            # missing values take the default side
    clf = BoostClassifier(n_estimators=100, max_depth=3).fit(X_train, y_train)
    path = out_dir / "classifier.onnx"
    path.write_bytes(to_onnx(clf, X_train[:1], options={"zipmap": False})
                     .SerializeToString())
    label, proba = run_onnx(path, X=X_test)
    print(f"ONNX classifier: labels equal: "
          f"{bool(np.all(label == clf.predict(X_test)))}, max probability "
          f"difference {np.abs(proba - clf.predict_proba(X_test)).max():.1e}")
    gtil = treelite.gtil.predict(to_treelite(clf), X_test)
    print(f"Treelite classifier: max probability difference "
          f"{np.abs(gtil[:, 0, 0] - clf.predict_proba(X_test)[:, 1]).max():.1e}")


def pipeline(out_dir):
    rng = np.random.default_rng(0)
    n = 2000
    frame = pd.DataFrame({
        "age": rng.uniform(18, 90, n).astype(np.float32),
        "income": rng.lognormal(10, 1, n).astype(np.float32),
        "city": rng.choice(["Lyon", "Oslo", "Pune", "Quito"], n)})
    frame.loc[rng.random(n) < 0.1, "income"] = np.nan
    y = ((frame["age"] > 50) ^ frame["city"].isin(["Oslo", "Pune"])).to_numpy()
    columns = ColumnTransformer([("age", "passthrough", ["age"]),
                                 ("income", SimpleImputer(), ["income"]),
                                 ("city", OrdinalEncoder(), ["city"])])
    model = make_pipeline(columns, BoostClassifier(
        n_estimators=50, categorical_features=[2])).fit(frame, y)
    onnx_model = skl2onnx.to_onnx(
        model, initial_types=[("age", FloatTensorType([None, 1])),
                              ("income", FloatTensorType([None, 1])),
                              ("city", StringTensorType([None, 1]))],
        options={BoostClassifier: {"zipmap": False}})
    path = out_dir / "pipeline.onnx"
    path.write_bytes(onnx_model.SerializeToString())
    label, proba = run_onnx(
        path, age=frame[["age"]].to_numpy(np.float32),
        income=frame[["income"]].to_numpy(np.float32),
        city=frame[["city"]].to_numpy().astype(str))
    print(f"ONNX pipeline: labels equal: "
          f"{bool(np.all(label == model.predict(frame)))}, max probability "
          f"difference {np.abs(proba - model.predict_proba(frame)).max():.1e}")


# %%
# One estimator, to ONNX and to Treelite
# --------------------------------------
# Missing values in the test rows take each split's default side in every
# runtime.
out_dir = Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp())
one_estimator(out_dir)

# %%
# A pipeline with a categorical column, through skl2onnx
# ------------------------------------------------------
# Importing ``skboost.onnx`` registers skboost's estimators with skl2onnx, so
# a pipeline that holds one converts as a whole.
pipeline(out_dir)
