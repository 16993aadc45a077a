"""
Categorical data
================

pandas ``category`` columns are categorical features without any encoding:
a split sends a set of categories left and the rest right (one category
against the rest up to ``max_cat_to_onehot`` categories, an optimal sorted
partition beyond). This example draws a shop's sales data with a
300-category ``product`` column, a 12-category ``month`` and two numeric
columns, and compares the native splits with the two usual encodings:
one-hot columns and integer codes treated as numbers. Categories unseen in
training take the missing values' side at prediction. It takes a few
seconds.
"""

import time

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import train_test_split

from skboost import BoostClassifier

rng = np.random.default_rng(0)
n = 30_000
products = np.array([f"p{i:03d}" for i in range(300)])
product_effect = rng.normal(scale=1.0, size=products.size)
months = np.array(["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug",
                   "Sep", "Oct", "Nov", "Dec"])
month_effect = np.sin(np.arange(12) / 12 * 2 * np.pi)
popularity = 1.0 / np.arange(1, products.size + 1) ** 0.8

product = rng.choice(products.size, n, p=popularity / popularity.sum())
month = rng.integers(0, 12, n)
frame = pd.DataFrame({
    "product": pd.Categorical.from_codes(product, products),
    "month": pd.Categorical.from_codes(month, months),
    "price": rng.lognormal(3, 0.5, n),
    "discount": rng.uniform(0, 0.3, n),
})
logit = (product_effect[product] + month_effect[month]
         - 0.02 * (frame["price"] - 20) + 4 * frame["discount"])
y = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)
X_train, X_test, y_train, y_test = train_test_split(frame, y, test_size=0.3,
                                                    random_state=0)
print(frame.dtypes.to_string())

# %%
# Three ways to give the categories to the model
# ----------------------------------------------
# Native: the ``category`` columns as they are. One-hot: a 0/1 column per
# category (pandas ``get_dummies``). Codes: each category's integer code as
# a number, so a split can only cut the codes' order.
categorical = ["product", "month"]
one_hot_train = pd.get_dummies(X_train, columns=categorical, dtype=float)
one_hot_test = pd.get_dummies(X_test, columns=categorical,
                              dtype=float)[one_hot_train.columns]


def as_codes(df):
    return df.assign(**{c: df[c].cat.codes for c in categorical})


inputs = {
    "native categorical": (X_train, X_test),
    f"one-hot ({one_hot_train.shape[1]} columns)": (one_hot_train,
                                                    one_hot_test),
    "integer codes": (as_codes(X_train), as_codes(X_test)),
}
# The effects add up (no interactions), so shallow trees suffice. With deep
# trees, partitions of many rare categories can fit noise: ``max_depth``,
# ``min_child_weight`` and ``max_cat_threshold`` (the most categories a
# partition may send left) hold them back.
params = dict(n_estimators=200, max_depth=4, learning_rate=0.1)
results = {}
for name, (train, test) in inputs.items():
    start = time.perf_counter()
    model = BoostClassifier(**params).fit(train, y_train)
    seconds = time.perf_counter() - start
    auc = roc_auc_score(y_test, model.predict_proba(test)[:, 1])
    results[name] = (seconds, auc)
    print(f"{name:>24}: fit {seconds:.2f} s, test AUC {auc:.4f}")

# %%
# What the native model learned and kept
# --------------------------------------
# The categories are stored with the model (``categories_``) and matched by
# value at prediction, so a frame whose categories are listed in another
# order predicts the same. A product never seen in training takes the
# missing values' side.
native = BoostClassifier(**params).fit(X_train, y_train)
print("categories_ of 'month':", list(native.categories_["month"])[:4], "...")
reordered = X_test.assign(month=X_test["month"].cat.reorder_categories(
    months[::-1]))
print("same predictions with the categories in another order:",
      np.array_equal(native.predict_proba(reordered),
                     native.predict_proba(X_test)))
new_product = X_test.iloc[:3].assign(product=pd.Categorical(
    ["p999"] * 3, categories=list(products) + ["p999"]))
print("an unseen product predicts:",
      np.round(native.predict_proba(new_product)[:, 1], 3))

# %%
# Accuracy and fit time
# ---------------------
fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6))
names = list(results)
left.barh(names, [results[k][1] for k in names], color="tab:blue")
left.set_xlim(min(r[1] for r in results.values()) - 0.02,
              max(r[1] for r in results.values()) + 0.01)
left.set_xlabel("test AUC")
right.barh(names, [results[k][0] for k in names], color="tab:orange")
right.set_xlabel("fit time (s)")
right.set_yticks([])
left.set_title("Accuracy")
right.set_title("Fit time (200 trees of depth 4)")
fig.tight_layout()
