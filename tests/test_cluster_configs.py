"""The cluster configs: the Ray cluster YAML passes Ray's own schema, and every node of both configs checks
the sandbox and runs it with what bwrap needs (user namespaces, seccomp and AppArmor unconfined)."""

from __future__ import annotations

from pathlib import Path

import yaml

CLUSTER = Path(__file__).resolve().parents[1] / "cluster"
CHECK = "from coding_framework.sandbox.backends.bwrap import check_available; check_available()"


def test_ray_cluster_yaml_passes_rays_schema() -> None:
    from ray.autoscaler._private.util import prepare_config, validate_config

    config = yaml.safe_load((CLUSTER / "ray-cluster.yaml").read_text())
    validate_config(prepare_config(config))  # raises on an unknown or missing field
    assert any(CHECK in cmd for cmd in config["setup_commands"])
    assert {"--security-opt seccomp=unconfined", "--security-opt apparmor=unconfined"} <= set(
        config["docker"]["run_options"])
    assert any("verl==0.9.1" in cmd for cmd in config["setup_commands"])


def test_kuberay_pods_check_and_allow_the_sandbox() -> None:
    cluster = yaml.safe_load((CLUSTER / "kuberay-raycluster.yaml").read_text())
    assert (cluster["apiVersion"], cluster["kind"]) == ("ray.io/v1", "RayCluster")
    groups = [cluster["spec"]["headGroupSpec"], *cluster["spec"]["workerGroupSpecs"]]
    for group in groups:
        pod = group["template"]["spec"]
        assert CHECK in " ".join(pod["initContainers"][0]["command"])
        for container in [*pod["initContainers"], *pod["containers"]]:
            security = container["securityContext"]
            assert security["seccompProfile"] == {"type": "Unconfined"}
            assert security["appArmorProfile"] == {"type": "Unconfined"}
            assert not security.get("privileged", False)
    worker = cluster["spec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]
    assert worker["resources"]["limits"]["nvidia.com/gpu"] == "8"
