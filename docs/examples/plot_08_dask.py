"""
Dask on a small local cluster
=============================

The same calls take a Dask DataFrame: every partition runs the batch kernel and the summaries are
tree-reduced, so the figures equal those of pandas data on the same rows. A ``LocalCluster`` with
``processes=False`` keeps this example in one process (threads); a real cluster only changes the client.
"""

import logging

import dask.dataframe as dd
import numpy as np
import pandas as pd
from distributed import Client, LocalCluster
from sklearn.linear_model import LogisticRegression

import fme

rng = np.random.default_rng(0)
d = pd.DataFrame({"x": rng.normal(size=4000), "w": rng.normal(size=4000)})
d["y"] = (rng.uniform(size=4000) < 1 / (1 + np.exp(-(0.8 * d["x"] - 0.5 * d["w"])))).astype(int)
clf = LogisticRegression().fit(d[["x", "w"]], d["y"])
ddf = dd.from_pandas(d[["x", "w"]], npartitions=4)

cluster_kw = dict(n_workers=1, threads_per_worker=2, processes=False, silence_logs=logging.ERROR,
                  dashboard_address=None, scheduler_kwargs={"dashboard": False})
with LocalCluster(**cluster_kw) as cluster, Client(cluster):
    on_dask = fme.fme(clf, ddf, {"x": 1}, nlm=True, target_class=1, inference="sample")
    print(on_dask.summary())
    dask_ame = on_dask.ame

in_memory = fme.fme(clf, d[["x", "w"]], {"x": 1}, nlm=True, target_class=1, inference="sample")
print("pandas:", in_memory.ame, " dask:", dask_ame, " relative difference:", abs(dask_ame / in_memory.ame - 1))
