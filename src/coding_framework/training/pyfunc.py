"""Where ``GeneratorModel`` was defined before training's run modules moved under ``run/``.

MLflow models registered before that move hold a pickled ``GeneratorModel`` that names this module, and
``mlflow.pyfunc.load_model`` imports it to load them. Nothing in the package imports it; versions
registered since store code that imports ``coding_framework.training.GeneratorModel`` instead.
"""

from coding_framework.training.run.pyfunc import GeneratorModel

__all__ = ["GeneratorModel"]
