"""Trained lead-lag models (issue 29): walk-forward splits (``walkforward``), the training data from market-model
seeds or captured sessions (``data``), selection and export of the model file (``train``), the CLI (``app``,
`caerus train`) and the out-of-sample comparison against the naive rule (``oos``). The hot-path side (reading the
file, evaluating it, deciding) is caerus.strategy.model_signal; the features are caerus.strategy.feature_vector.
"""
