"""The deployment files agree with the code and with each other: the image (Dockerfile),
the local stack (docker-compose.yml, Prometheus, Grafana) and the Kubernetes manifests as
kustomize renders them, each also checked by a real validator where one installs from PyPI
(hadolint, the compose spec, Kubernetes' own schemas)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import sysconfig
import tomllib
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import kubernetes_validate
import pytest
import setuptools
import yaml
from prometheus_client.parser import text_string_to_metric_families
from servers import Proxy

from service.app import create_app
from service.observability import otel
from service.passthrough import READINESS_TIMEOUT_SECONDS
from service.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "k8s"
COMPOSE_FILE = ROOT / "docker-compose.yml"
DASHBOARD = ROOT / "deploy" / "grafana" / "dashboards" / "toolcall-proxy.json"

# What the proxy serves, in one place: its image's port and its probe and metrics paths
# (the probe paths are checked against the app's routes below).
PROXY_PORT = 8000
LIVENESS_PATH = "/healthz"
READINESS_PATH = "/readyz"
METRICS_PATH = "/metrics"
OTLP_HTTP_PORT = 4318  # OTLP over HTTP, the protocol the proxy exports with by default
JAEGER_UI_PORT = "16686"
PROXY_CONTAINER = "proxy"
PROXY_NAME = "toolcall-proxy"  # the app.kubernetes.io/name of the proxy's manifests
# Kubernetes' schema version to validate against: the oldest minor release still commonly run.
KUBERNETES_VERSION = "1.30"
# The series each metric type exposes (prometheus-client's `_created` samples aside).
SERIES_SUFFIXES = {
    "counter": ("_total",),
    "gauge": ("",),
    "histogram": ("_bucket", "_count", "_sum"),
}
METRIC_NAME = re.compile(r"\btoolcall_proxy_\w+")
# Kinds that Kubernetes' schemas do not cover (Prometheus Operator CRDs); checked by hand below.
CUSTOM_KINDS = frozenset({"ServiceMonitor"})

KUSTOMIZATIONS = sorted(path.parent.name for path in K8S.glob("*/kustomization.yaml"))
PROXY_KUSTOMIZATIONS = ["base", "standalone"]


@cache
def rendered(kustomization: str) -> tuple[dict[str, Any], ...]:
    """The manifests `kubectl apply -k deploy/k8s/<kustomization>` would apply, rendered by
    the kubectl that the test extra installs (kustomize is built in)."""
    result = subprocess.run(
        [venv_script("kubectl"), "kustomize", str(K8S / kustomization)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    return tuple(doc for doc in yaml.safe_load_all(result.stdout) if doc)


def only(kustomization: str, kind: str, name: str = PROXY_NAME) -> dict[str, Any]:
    """The one manifest of `kind` belonging to `name`'s app: those labelled with another
    app's name (the shared store's) are left out."""
    [manifest] = [
        doc
        for doc in rendered(kustomization)
        if doc["kind"] == kind and app_name(doc) in (None, name)
    ]
    return manifest


def app_name(manifest: dict[str, Any]) -> str | None:
    labels: dict[str, str] = manifest["metadata"].get("labels", {})
    return labels.get("app.kubernetes.io/name")


def proxy_container(kustomization: str) -> dict[str, Any]:
    pod_spec = only(kustomization, "Deployment")["spec"]["template"]["spec"]
    containers: list[dict[str, Any]] = pod_spec["containers"]
    [container] = [c for c in containers if c["name"] == PROXY_CONTAINER]
    return container


def settings_env_names() -> set[str]:
    """The environment variables the proxy reads: Settings' fields, no prefix."""
    return {name.upper() for name in Settings.model_fields}


def load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n", " ", (ROOT / "Dockerfile").read_text())
    lines = [line.strip() for line in joined.splitlines()]
    pairs = [line.split(maxsplit=1) for line in lines if line and not line.startswith("#")]
    return [(pair[0].upper(), pair[1] if len(pair) > 1 else "") for pair in pairs]


def final_stage() -> list[tuple[str, str]]:
    instructions = dockerfile_instructions()
    last_from = max(i for i, (name, _) in enumerate(instructions) if name == "FROM")
    return instructions[last_from:]


def venv_script(name: str) -> str:
    """A console script installed beside this interpreter (the test extra's validators)."""
    return str(Path(sysconfig.get_path("scripts")) / name)


# --- every YAML file ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    sorted([COMPOSE_FILE, *ROOT.glob("deploy/**/*.yaml"), *ROOT.glob("deploy/**/*.yml")]),
    ids=lambda path: str(path.relative_to(ROOT)),
)
def test_yaml_file_parses_into_documents(path: Path) -> None:
    documents = [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]
    assert documents
    assert all(isinstance(doc, dict) for doc in documents)


# --- Kubernetes ----------------------------------------------------------------------------


def test_probe_paths_are_routes_of_the_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in settings_env_names():  # the developer's own exported knobs must not leak in
        monkeypatch.delenv(name, raising=False)
    app = create_app(Settings(upstream_base_url="http://127.0.0.1:8001/v1"))

    assert {LIVENESS_PATH, READINESS_PATH} <= set(_paths(app.routes))


def _paths(routes: list[Any]) -> Iterator[str]:
    """The paths of `routes`, and of the routers each door registered (FastAPI includes a
    router as one route holding the router)."""
    for route in routes:
        included = getattr(route, "original_router", None)
        yield from _paths(included.routes) if included is not None else [route.path]


@pytest.mark.parametrize("kustomization", KUSTOMIZATIONS)
def test_kustomization_lists_only_files_that_exist(kustomization: str) -> None:
    spec = load_yaml(K8S / kustomization / "kustomization.yaml")
    listed = list(spec.get("resources", []))
    for generator in spec.get("configMapGenerator", []):
        listed += generator.get("envs", []) + generator.get("files", [])

    assert listed
    assert [name for name in listed if not (K8S / kustomization / name).exists()] == []


@pytest.mark.parametrize("kustomization", KUSTOMIZATIONS)
def test_rendered_manifests_validate_against_kubernetes_schemas(kustomization: str) -> None:
    manifests = [doc for doc in rendered(kustomization) if doc["kind"] not in CUSTOM_KINDS]
    for manifest in manifests:
        kubernetes_validate.validate(manifest, KUBERNETES_VERSION, strict=True)


@pytest.mark.parametrize("kustomization", PROXY_KUSTOMIZATIONS)
def test_proxy_container_probes_and_port_match_what_the_proxy_serves(kustomization: str) -> None:
    container = proxy_container(kustomization)

    assert container["ports"] == [{"name": "http", "containerPort": PROXY_PORT}]
    assert container["livenessProbe"]["httpGet"] == {"path": LIVENESS_PATH, "port": "http"}
    assert container["readinessProbe"]["httpGet"] == {"path": READINESS_PATH, "port": "http"}
    assert container["image"].startswith("toolcall-proxy:")
    assert {"cpu", "memory"} <= container["resources"]["requests"].keys()
    assert {"cpu", "memory"} <= container["resources"]["limits"].keys()
    assert container["securityContext"]["runAsNonRoot"] is True


@pytest.mark.parametrize("kustomization", PROXY_KUSTOMIZATIONS)
def test_pods_get_no_service_link_variables(kustomization: str) -> None:
    pod_spec = only(kustomization, "Deployment")["spec"]["template"]["spec"]

    assert pod_spec["enableServiceLinks"] is False


@pytest.mark.parametrize("kustomization", PROXY_KUSTOMIZATIONS)
def test_readiness_probe_waits_longer_than_readyz_waits_for_the_upstream(
    kustomization: str,
) -> None:
    probe = proxy_container(kustomization)["readinessProbe"]

    assert probe["timeoutSeconds"] > READINESS_TIMEOUT_SECONDS


@pytest.mark.parametrize("kustomization", PROXY_KUSTOMIZATIONS)
def test_pod_grace_covers_the_pre_stop_pause_and_the_proxys_drain(kustomization: str) -> None:
    pod_spec = only(kustomization, "Deployment")["spec"]["template"]["spec"]
    pre_stop = proxy_container(kustomization)["lifecycle"]["preStop"]
    environment = only(kustomization, "ConfigMap")["data"]
    drain = int(environment.get("DRAIN_TIMEOUT", Settings.model_fields["drain_timeout"].default))

    assert pre_stop["sleep"]["seconds"] > 0  # endpoints drop the pod before it stops accepting
    assert pod_spec["terminationGracePeriodSeconds"] > pre_stop["sleep"]["seconds"] + drain


def test_sidecar_model_server_keeps_serving_until_the_proxy_has_drained() -> None:
    containers = only("base", "Deployment")["spec"]["template"]["spec"]["containers"]
    [model_server] = [c for c in containers if c["name"] != PROXY_CONTAINER]
    command = model_server["lifecycle"]["preStop"]["exec"]["command"]
    upstream_port = urlsplit(only("base", "ConfigMap")["data"]["UPSTREAM_BASE_URL"]).port

    assert command[:2] == ["python3", "-c"]
    compile(command[2], "preStop", "exec")  # the script at least parses
    assert upstream_port is not None
    # /proc/net/tcp writes ports in hex: the script waits on the port the proxy calls.
    assert f":{upstream_port:04X}'" in command[2]


@pytest.mark.parametrize("kustomization", PROXY_KUSTOMIZATIONS)
def test_pods_ask_prometheus_to_scrape_the_metrics_on_the_api_port(kustomization: str) -> None:
    annotations = only(kustomization, "Deployment")["spec"]["template"]["metadata"]["annotations"]

    assert annotations == {
        "prometheus.io/scrape": "true",
        "prometheus.io/port": str(PROXY_PORT),
        "prometheus.io/path": METRICS_PATH,
    }


@pytest.mark.parametrize("kustomization", PROXY_KUSTOMIZATIONS)
def test_proxy_environment_names_are_settings_the_proxy_reads(kustomization: str) -> None:
    container = proxy_container(kustomization)
    [config_map_ref] = [source["configMapRef"]["name"] for source in container["envFrom"]]
    config_map = only(kustomization, "ConfigMap")
    names = set(config_map["data"]) | {variable["name"] for variable in container.get("env", [])}

    assert config_map["metadata"]["name"] == config_map_ref
    assert "UPSTREAM_BASE_URL" in names
    assert names <= settings_env_names()


@pytest.mark.parametrize("kustomization", PROXY_KUSTOMIZATIONS)
def test_service_routes_to_the_proxy_pods_by_port_name(kustomization: str) -> None:
    service = only(kustomization, "Service")
    pod_labels = only(kustomization, "Deployment")["spec"]["template"]["metadata"]["labels"]
    port_names = {port["name"] for port in proxy_container(kustomization)["ports"]}

    assert service["spec"]["selector"].items() <= pod_labels.items()
    assert {port["targetPort"] for port in service["spec"]["ports"]} <= port_names


def test_sidecar_proxy_reaches_the_model_server_on_the_pods_loopback() -> None:
    containers = only("base", "Deployment")["spec"]["template"]["spec"]["containers"]
    [model_server] = [c for c in containers if c["name"] != PROXY_CONTAINER]
    upstream_url = only("base", "ConfigMap")["data"]["UPSTREAM_BASE_URL"]

    assert upstream_url == "http://127.0.0.1:8001/v1"
    assert {"--host=127.0.0.1", "--port=8001"} <= set(model_server["args"])


def test_sidecar_and_standalone_declare_the_same_proxy_container() -> None:
    def declared(kustomization: str) -> dict[str, Any]:
        deployment = load_yaml(K8S / kustomization / "deployment.yaml")
        containers = deployment["spec"]["template"]["spec"]["containers"]
        [container] = [c for c in containers if c["name"] == PROXY_CONTAINER]
        return {key: value for key, value in container.items() if key != "env"}

    assert declared("base") == declared("standalone")


def test_autoscaler_and_disruption_budget_cover_the_standalone_deployment() -> None:
    deployment = only("standalone", "Deployment")
    autoscaler = only("standalone", "HorizontalPodAutoscaler")["spec"]
    budget = only("standalone", "PodDisruptionBudget")["spec"]
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]

    assert autoscaler["scaleTargetRef"]["name"] == deployment["metadata"]["name"]
    assert "replicas" not in deployment["spec"]  # the autoscaler owns the count
    assert budget["selector"]["matchLabels"].items() <= pod_labels.items()
    # A budget that needs every replica would block node drains for good.
    assert budget["minAvailable"] < autoscaler["minReplicas"]


@pytest.mark.parametrize("kustomization", PROXY_KUSTOMIZATIONS)
def test_proxy_replicas_beyond_one_share_a_store_served_beside_them(kustomization: str) -> None:
    """A conversation's next turn may land on any replica: with more than one, every one
    must name the same Redis, here a Service of the same kustomization, on its store's port."""
    deployment = only(kustomization, "Deployment")["spec"]
    autoscalers = [
        doc for doc in rendered(kustomization) if doc["kind"] == "HorizontalPodAutoscaler"
    ]
    most = max([deployment.get("replicas", 1)] + [a["spec"]["maxReplicas"] for a in autoscalers])
    store_url = only(kustomization, "ConfigMap")["data"].get("RESPONSE_STORE_URL")

    if most == 1:
        assert store_url is None  # one pod: its memory is the store
        return
    assert store_url is not None
    url = urlsplit(store_url)
    service = only(kustomization, "Service", name=str(url.hostname))
    store = only(kustomization, "Deployment", name=str(url.hostname))["spec"]["template"]
    [container] = store["spec"]["containers"]
    [port] = [port for port in service["spec"]["ports"] if port["port"] == url.port]
    assert url.scheme == "redis"
    assert service["spec"]["selector"].items() <= store["metadata"]["labels"].items()
    assert port["targetPort"] in {port["name"] for port in container["ports"]}
    assert "--save" in container["args"]  # a cache: nothing on disk
    assert all(autoscaler["spec"]["minReplicas"] > 1 for autoscaler in autoscalers)


def test_only_the_proxy_pods_reach_the_shared_store() -> None:
    [policy] = [doc for doc in rendered("standalone") if doc["kind"] == "NetworkPolicy"]
    store_labels = only("standalone", "Deployment", name=policy["metadata"]["name"])["spec"][
        "template"
    ]["metadata"]["labels"]
    proxy_labels = only("standalone", "Deployment")["spec"]["template"]["metadata"]["labels"]
    [rule] = policy["spec"]["ingress"]
    [source] = rule["from"]

    assert policy["spec"]["podSelector"]["matchLabels"].items() <= store_labels.items()
    assert source["podSelector"]["matchLabels"].items() <= proxy_labels.items()


def test_service_monitor_scrapes_the_proxy_service_metrics() -> None:
    monitor = only("monitoring", "ServiceMonitor")["spec"]
    service = only("standalone", "Service")
    [endpoint] = monitor["endpoints"]

    assert monitor["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert endpoint["port"] in {port["name"] for port in service["spec"]["ports"]}
    assert endpoint["path"] == METRICS_PATH


# --- the image -----------------------------------------------------------------------------


def test_dockerfile_passes_hadolint() -> None:
    result = subprocess.run(
        [venv_script("hadolint"), "--no-color", str(ROOT / "Dockerfile")],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_image_listens_on_the_proxy_port_and_checks_its_health_endpoint() -> None:
    stage = final_stage()
    env = " ".join(arguments for name, arguments in stage if name == "ENV")
    [healthcheck] = [arguments for name, arguments in stage if name == "HEALTHCHECK"]

    assert ("EXPOSE", str(PROXY_PORT)) in stage
    assert f"PROXY_PORT={PROXY_PORT}" in env.split()
    assert "PROXY_HOST=0.0.0.0" in env.split()
    assert f"'{LIVENESS_PATH}'" in healthcheck
    assert {"PROXY_HOST", "PROXY_PORT"} <= settings_env_names()


def test_image_runs_the_projects_console_script_as_a_non_root_user() -> None:
    stage = final_stage()
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    [user] = [arguments for name, arguments in stage if name == "USER"]

    assert stage[0] == ("FROM", "${PYTHON_IMAGE}")
    assert ("ARG", "PYTHON_IMAGE=python:3.11-slim") in dockerfile_instructions()
    assert stage[-1] == ("CMD", '["toolcall-proxy"]')
    assert "toolcall-proxy" in scripts
    assert user not in {"0", "root"}


def test_build_context_lets_in_everything_the_project_wheel_is_built_from() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    allowed = {
        line.removeprefix("!").rstrip("/")
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.startswith("!")
    }
    needed = {"pyproject.toml", "requirements.lock", project["project"]["readme"]}
    included = project["tool"]["setuptools"]["packages"]["find"]["include"]
    top_level = {pattern.split(".")[0] for pattern in included}

    assert needed | top_level <= allowed


def test_lock_pins_every_runtime_dependency_with_hashes() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    lock = (ROOT / "requirements.lock").read_text()
    pinned = {
        normalised_name(match[1]): match[2]
        for match in re.finditer(r"^([A-Za-z0-9._-]+)==(\S+)", lock, re.MULTILINE)
    }
    required = {
        normalised_name(re.split(r"[\[<>=!~;\s]", dependency, maxsplit=1)[0])
        for dependency in project["dependencies"]
    }

    assert required <= pinned.keys()
    assert all(
        "--hash=sha256:" in block for block in re.split(r"\n(?=[A-Za-z])", lock) if "==" in block
    )


def test_project_wheel_holds_every_package_of_the_code() -> None:
    """Listing only the top-level packages left service/'s seams (wire, chat...) out of the
    wheel: the image's command failed at its first import."""
    included = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "packages"
    ]["find"]["include"]
    top_level = {pattern.split(".")[0] for pattern in included}
    packages = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for name in top_level
        for init in (ROOT / name).rglob("__init__.py")
    }

    assert set(setuptools.find_packages(str(ROOT), include=included)) == packages


def normalised_name(name: str) -> str:
    """A distribution name as PEP 503 compares them."""
    return re.sub(r"[-_.]+", "-", name).lower()


# --- the local stack: compose, Prometheus, Grafana -----------------------------------------


def compose_services() -> dict[str, Any]:
    services: dict[str, Any] = load_yaml(COMPOSE_FILE)["services"]
    return services


def bind_mounts(service: dict[str, Any]) -> dict[str, str]:
    """A compose service's `source:target[:mode]` volumes, as {source: target}."""
    mounts = {}
    for volume in service.get("volumes", []):
        source, target, *_mode = volume.split(":")
        mounts[source] = target
    return mounts


def test_compose_file_follows_the_compose_spec() -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "check_jsonschema",
            "--builtin-schema",
            "vendor.compose-spec",
            str(COMPOSE_FILE),
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_compose_bind_mounts_name_files_in_the_repository() -> None:
    sources = [source for service in compose_services().values() for source in bind_mounts(service)]

    assert sources
    assert [source for source in sources if not (ROOT / source).exists()] == []


def test_compose_proxy_is_built_here_and_published_on_its_port() -> None:
    proxy = compose_services()["proxy"]
    build_context = ROOT / proxy["build"]

    assert (build_context / "Dockerfile").is_file()
    assert [port.rsplit(":", 1)[1] for port in proxy["ports"]] == [str(PROXY_PORT)]
    assert set(proxy.get("environment") or {}) - otel_env_names(proxy) <= settings_env_names()


def otel_env_names(service: dict[str, Any]) -> set[str]:
    """The standard OpenTelemetry variables a service sets (the proxy reads them as is)."""
    return {name for name in service.get("environment") or {} if name.startswith("OTEL_")}


def compose_value(value: str) -> str:
    """A compose value as compose interpolates it with nothing set: `${NAME:-default}` is
    `default`."""
    return re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", value)


def test_compose_proxy_without_upstream_url_uses_the_embedded_demo(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    environment = compose_services()["proxy"].get("environment") or {}
    for name in settings_env_names():  # the developer's own exported knobs must not leak in
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, compose_value(value))

    assert "UPSTREAM_BASE_URL" not in environment
    assert Settings().uses_demo_upstream


def test_compose_offers_the_shared_store_behind_a_profile_the_proxy_can_be_pointed_at() -> None:
    services = compose_services()
    [name] = [
        name for name, service in services.items() if "shared-store" in service.get("profiles", ())
    ]
    store = services[name]
    proxy_store_url = services["proxy"]["environment"]["RESPONSE_STORE_URL"]

    assert "profiles" not in services["proxy"]  # the proxy starts without the profile
    assert compose_value(proxy_store_url) == ""  # and then keeps responses in its memory
    assert "ports" not in store  # only the proxy reaches it
    assert "--save" in store["command"]  # a cache: nothing on disk
    # The file's own instructions name the service and its port.
    assert f"RESPONSE_STORE_URL=redis://{name}:6379/0" in COMPOSE_FILE.read_text()
    assert "--profile shared-store" in COMPOSE_FILE.read_text()


def test_compose_offers_a_tracing_backend_behind_a_profile_the_proxy_exports_to() -> None:
    services = compose_services()
    [name] = [
        name for name, service in services.items() if "tracing" in service.get("profiles", ())
    ]
    endpoint = services["proxy"]["environment"]["OTEL_EXPORTER_OTLP_ENDPOINT"]
    documented = f"OTEL_EXPORTER_OTLP_ENDPOINT=http://{name}:{OTLP_HTTP_PORT}"

    assert services[name]["image"].startswith("jaegertracing/jaeger:")
    assert not otel.signals({"OTEL_EXPORTER_OTLP_ENDPOINT": compose_value(endpoint)}).any
    assert otel.signals(dict([documented.split("=")])).traces  # the file's own instructions
    assert f"{documented} docker compose --profile tracing" in COMPOSE_FILE.read_text()
    assert [port.rsplit(":", 1)[1] for port in services[name]["ports"]] == [JAEGER_UI_PORT]


def test_prometheus_scrapes_the_compose_proxy_metrics_on_its_api_port() -> None:
    config = load_yaml(ROOT / "deploy" / "prometheus" / "prometheus.yml")
    [job] = config["scrape_configs"]
    [static_config] = job["static_configs"]

    assert job["metrics_path"] == METRICS_PATH
    assert static_config["targets"] == [f"proxy:{PROXY_PORT}"]
    assert "proxy" in compose_services()


def test_grafana_reads_the_compose_prometheus_and_the_mounted_dashboards_folder() -> None:
    provisioning = ROOT / "deploy" / "grafana" / "provisioning"
    [datasource] = load_yaml(provisioning / "datasources" / "prometheus.yml")["datasources"]
    [provider] = load_yaml(provisioning / "dashboards" / "toolcall-proxy.yml")["providers"]
    grafana_mounts = bind_mounts(compose_services()["grafana"])
    prometheus_ports = compose_services()["prometheus"]["ports"]

    assert datasource["url"] == "http://prometheus:9090"
    assert [port.rsplit(":", 1)[1] for port in prometheus_ports] == ["9090"]
    assert grafana_mounts["./deploy/grafana/dashboards"] == provider["options"]["path"]
    assert grafana_mounts["./deploy/grafana/provisioning"] == "/etc/grafana/provisioning"


def dashboard_queries() -> list[str]:
    """The PromQL of every panel target of the Grafana dashboard."""
    panels = json.loads(DASHBOARD.read_text())["panels"]
    return [target["expr"] for panel in panels for target in panel.get("targets", ())]


def exported_series(proxy: Proxy) -> set[str]:
    """Every series name the live proxy's /metrics declares, labelled values seen or not
    (creation timestamps aside: nobody charts them)."""
    response = proxy.http.get(METRICS_PATH)
    assert response.status_code == 200
    return {
        family.name + suffix
        for family in text_string_to_metric_families(response.text)
        if not family.name.endswith("_created")
        for suffix in SERIES_SUFFIXES[family.type]
    }


def test_dashboard_queries_name_only_metrics_the_proxy_exports(proxy: Proxy) -> None:
    named = {name for query in dashboard_queries() for name in METRIC_NAME.findall(query)}

    assert named
    assert named - exported_series(proxy) == set()


def test_dashboard_shows_every_metric_the_proxy_exports(proxy: Proxy) -> None:
    queries = "\n".join(dashboard_queries())
    exported = {name.removesuffix("_bucket") for name in exported_series(proxy)}
    unshown = {
        name for name in exported if name not in queries and not name.endswith(("_count", "_sum"))
    }

    assert unshown == set()


def test_dashboard_panels_read_the_prometheus_chosen_in_its_datasource_variable() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    [variable] = [v for v in dashboard["templating"]["list"] if v["type"] == "datasource"]
    panels = [panel for panel in dashboard["panels"] if "targets" in panel]

    # No fixed uid: kube-prometheus-stack's Prometheus is not called `prometheus`.
    assert variable["query"] == "prometheus"
    assert panels
    assert {json.dumps(panel["datasource"]) for panel in panels} == {
        json.dumps({"type": "prometheus", "uid": f"${{{variable['name']}}}"})
    }
