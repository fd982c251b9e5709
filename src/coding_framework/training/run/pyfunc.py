"""The trained Generator as an MLflow pyfunc model: task statements in, the model's answers out.

``mlflow.pyfunc.load_model(uri).predict(["Write a function add(a, b) ..."])`` renders each statement with
the Generator's system prompt and chat template, decodes greedily with the local engine (through the
Generator's adapter when the model has role adapters) and returns the answer texts. The Hugging Face model
directory travels as the ``hf_model`` artifact.

A registered version stores ``LOADER`` (MLflow's models from code), not a pickled ``GeneratorModel``: a
pickle names the module the class was defined in, so moving that module broke every version registered
before (``coding_framework.training.pyfunc``, which still loads through its alias module). ``LOADER`` names
the class by its public path, ``coding_framework.training.GeneratorModel``, which stays put when the
internals move.
"""

from __future__ import annotations

from importlib import metadata
from pathlib import Path
from typing import Any

from mlflow.pyfunc import PythonModel

from coding_framework.config.policies import GENERATOR_ROLE
from coding_framework.llm.base import SamplingParams
from coding_framework.problems.prompts import SYSTEM_PROMPT

LOADER = '''"""The coding-framework Generator: ``mlflow.pyfunc.load_model`` runs this file to build it."""

from mlflow.models import set_model

from coding_framework.training import GeneratorModel

set_model(GeneratorModel())
'''


def write_loader(directory: Path) -> Path:
    """``LOADER`` as a file in ``directory``, for ``mlflow.pyfunc.log_model(python_model=...)`` to copy."""
    path = directory / "generator_model.py"
    path.write_text(LOADER)
    return path


def pip_requirements() -> list[str]:
    """Pinned requirements of the pyfunc (given explicitly: MLflow's inference would import-scan the env)."""
    names = ("coding-framework", "torch", "transformers", "tokenizers", "safetensors")
    out = []
    for name in names:
        try:
            out.append(f"{name}=={metadata.version(name)}")
        except metadata.PackageNotFoundError:
            out.append(name)
    return out


class GeneratorModel(PythonModel):
    """Greedy answers of the trained model; ``params`` may set ``max_new_tokens`` and ``temperature``."""

    def load_context(self, context: Any) -> None:
        from coding_framework.config.llm import LLMConfig
        from coding_framework.config.model_ref import ModelRef
        from coding_framework.llm.factory import build_engine
        from coding_framework.models.registry import HF_ARTIFACT

        model = ModelRef.directory(context.artifacts[HF_ARTIFACT], engine="local")
        self.engine = build_engine(LLMConfig.from_spec(model, device="cpu"))

    def predict(
        self, context: Any, model_input: list[str], params: dict[str, Any] | None = None
    ) -> list[str]:
        del context
        prompts = [str(x) for x in model_input]
        params = params or {}
        tok = self.engine.tokenizer
        ids = [
            tok(
                tok.apply_chat_template(
                    [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": p}],
                    tokenize=False,
                    add_generation_prompt=True,
                ),
                add_special_tokens=False,
            )["input_ids"]
            for p in prompts
        ]
        sampling = SamplingParams(
            max_new_tokens=int(params.get("max_new_tokens", 256)),
            temperature=float(params.get("temperature", 0.0)),
            seed=0,
            role=GENERATOR_ROLE,
        )
        return [g.text for g in self.engine.generate_batch(ids, sampling)]
