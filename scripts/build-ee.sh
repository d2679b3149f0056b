#!/usr/bin/env bash
# Builds the execution environment image (extensions/ee/execution-environment.yml) on this machine, with
# no registry and no Galaxy, then runs the demo's site.yml inside it with ansible-runner. Not part of the
# test command: it takes minutes (debootstrap, apt and pip inside the build).
#   1. a Debian base image with python3 and pip (debootstrap), cached by the hash of this step;
#   2. the collection tarball (ansible-galaxy collection build) where the definition reads it;
#   3. the build context (ansible-builder create), with kubernetes.core taken from the installed
#      `ansible` package instead of Galaxy (ansible-galaxy --offline);
#   4. podman build: ansible-builder's introspection in the image finds the Python and system
#      requirements of the installed collections (rdma.node's meta/execution-environment.yml);
#   5. `ansible-runner run` of playbooks/site.yml on the demo inventory in the image, and a check of
#      its result: the stats artifact holds rdma_fleet and the report files were written.
# Prints the seconds of each step and the image size. Needs root, podman, debootstrap, and the venv of
# scripts/setup.sh on PATH (ansible-builder, ansible-galaxy, python with PyYAML).
# Usage: scripts/build-ee.sh [IMAGE_TAG]   (default rdma-node-ee:local)
#   EE_BUILD_NO_CACHE=1   podman build without its layer cache (to time a build from the base image up)
#   EE_BUILD_LOG_DIR=DIR  keep the podman build log, the runner log and the job's artifacts in DIR
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TAG=${1:-rdma-node-ee:local}
BASE=localhost/rdma-node-ee-base:bookworm
WORK=$(mktemp -d /tmp/rdma-node-ee.XXXXXX)
keep_logs() { [ -z "${EE_BUILD_LOG_DIR:-}" ] || { mkdir -p "$EE_BUILD_LOG_DIR" && cp -r "$WORK"/*.log "$WORK/job/artifacts" "$EE_BUILD_LOG_DIR"/ 2>/dev/null; } || true; }
trap 'keep_logs; rm -rf "$WORK"' EXIT
export CONTAINERS_CONF=${CONTAINERS_CONF:-$WORK/containers.conf}
[ -f "$CONTAINERS_CONF" ] || printf '[containers]\ndefault_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]\n[engine]\nruntime = "runc"\n' > "$CONTAINERS_CONF"
log() { printf 'build-ee: %s\n' "$*" >&2; }
TIMINGS=""
step_start=$(date +%s)
# Records how long the step that just ended took (seconds since the previous call).
timed() { local now; now=$(date +%s); TIMINGS="$TIMINGS $1=$((now - step_start))s"; step_start=$now; }

# 1. Base image. ansible-builder's scripts call "$PKGMGR install -y ..." and "$PKGMGR clean all" (dnf's
# words): a small wrapper gives apt-get the same words.
base_hash=$(sed -n '/^# 1. Base image/,/^podman tag/p' "$0" | sha256sum | cut -c1-12)
if ! podman image exists "$BASE-$base_hash"; then
  log "debootstrap of the base image"
  debootstrap --variant=minbase bookworm "$WORK/rootfs" >/dev/null
  chroot "$WORK/rootfs" apt-get update -qq
  chroot "$WORK/rootfs" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3 python3-pip >/dev/null
  # ansible-builder runs `python3 -m ensurepip`, which Debian leaves out of its system Python (it is
  # in python3-venv, disabled there); pip is already there from python3-pip, so the module only has to say so.
  mkdir -p "$WORK/rootfs/usr/lib/python3.11/ensurepip"
  : > "$WORK/rootfs/usr/lib/python3.11/ensurepip/__init__.py"
  printf 'import sys\nimport pip  # noqa: F401 (python3-pip provides it)\nsys.exit(0)\n' \
    > "$WORK/rootfs/usr/lib/python3.11/ensurepip/__main__.py"
  # pip inside the build reaches the package index through whatever this machine trusts (a proxy's CA).
  cp /etc/ssl/certs/ca-certificates.crt "$WORK/rootfs/etc/ssl/certs/ca-certificates.crt"
  printf '[global]\ncert = /etc/ssl/certs/ca-certificates.crt\n' > "$WORK/rootfs/etc/pip.conf"
  cat > "$WORK/rootfs/usr/local/bin/apt-dnf" <<'SH'
#!/bin/sh
# dnf's words for apt-get, for ansible-builder's scripts: install -y PKG..., clean all.
case "$1" in
  install) shift; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $(printf '%s\n' "$@" | grep -v '^-') ;;
  clean) apt-get clean && rm -rf /var/lib/apt/lists/* ;;
  *) exec apt-get "$@" ;;
esac
SH
  chmod 755 "$WORK/rootfs/usr/local/bin/apt-dnf"
  tar -C "$WORK/rootfs" -c . | podman import - "$BASE-$base_hash" >/dev/null
  rm -rf "$WORK/rootfs"
fi
podman tag "$BASE-$base_hash" "$BASE"
# The base counts as built by this run if podman created it after the run started.
if [ "$(podman image inspect --format '{{.Created.Unix}}' "$BASE")" -ge "$step_start" ]; then timed base_debootstrap; else timed base_cached; fi

# 2. The collection tarball, at the path the definition names (../../build/rdma-node.tar.gz from
# extensions/ee), in a copy of the checkout's layout.
mkdir -p "$WORK/checkout/build" "$WORK/checkout/extensions"
cp -r "$ROOT/extensions/ee" "$WORK/checkout/extensions/ee"
ansible-galaxy collection build --output-path "$WORK/checkout/build" "$ROOT" >/dev/null
mv "$WORK/checkout/build"/rdma-node-*.tar.gz "$WORK/checkout/build/rdma-node.tar.gz"

# 3. The build context; kubernetes.core from the installed ansible package: its directory holds
# MANIFEST.json and FILES.json, so a tar of it is a collection artifact that ansible-galaxy installs,
# once FILES.json lists only what the package ships (it leaves out .github and the like). With
# --offline, ansible-galaxy resolves rdma.node's dependency on kubernetes.core from that tarball.
k8s_core=$(python -c 'import ansible_collections.kubernetes.core as m; print(list(m.__path__)[0])')
cp -r "$k8s_core" "$WORK/kubernetes.core"
find "$WORK/kubernetes.core" -name __pycache__ -prune -exec rm -rf {} +
python - "$WORK/kubernetes.core" <<'PY'
import json, os, sys
root = sys.argv[1]
files = json.load(open(os.path.join(root, "FILES.json")))
files["files"] = [f for f in files["files"] if f["name"] == "." or os.path.lexists(os.path.join(root, f["name"]))]
json.dump(files, open(os.path.join(root, "FILES.json"), "w"))
PY
tar -czf "$WORK/checkout/build/kubernetes-core.tar.gz" -C "$WORK/kubernetes.core" --transform "s,^\./,," .
python - "$WORK/checkout/extensions/ee/execution-environment.yml" <<'PY'
import sys, yaml
path = sys.argv[1]
ee = yaml.safe_load(open(path))
ee["additional_build_files"].append({"src": "../../build/kubernetes-core.tar.gz", "dest": "collections"})
ee["dependencies"]["galaxy"]["collections"].append({"name": "collections/kubernetes-core.tar.gz", "type": "file"})
yaml.safe_dump(ee, open(path, "w"))
PY
timed collection_tarballs
ansible-builder create -f "$WORK/checkout/extensions/ee/execution-environment.yml" --context "$WORK/context" \
  --output-filename Containerfile >/dev/null
timed builder_create

# 4. The image. The build log is kept for the introspection's output (rdma.node's requirements).
log "podman build of $TAG"
cache_opts=()
[ -z "${EE_BUILD_NO_CACHE:-}" ] || cache_opts=(--no-cache)
if ! podman build "${cache_opts[@]}" -f "$WORK/context/Containerfile" -t "$TAG" --build-arg EE_BASE_IMAGE="$BASE" \
    --build-arg PKGMGR=/usr/local/bin/apt-dnf --build-arg ANSIBLE_GALAXY_CLI_COLLECTION_OPTS=--offline \
    "$WORK/context" >"$WORK/build.log" 2>&1; then
  tail -n 40 "$WORK/build.log"
  log "podman build failed"
  exit 1
fi
timed podman_build
# What introspection found, as the build printed it (the lines "<requirement>  # from collection <name>").
grep -E '# from collection' "$WORK/build.log" | sed -E "s/^- '?//; s/'\$//" | sort -u | sed 's/^/build-ee: introspected /' >&2 || true

# 5. The demo inside the image as AWX would run it (ansible-runner in the container).
mkdir -p "$WORK/job/project" "$WORK/job/inventory" "$WORK/job/env" "$WORK/reports"
cp -r "$ROOT/playbooks" "$WORK/job/project/"
# The demo inventory: its simulated_nodes plugin builds the node roots under inventory/.nodes when the job starts.
# The plugin is the development collection rdma.demo's, which the image does not hold: the project brings it.
cp -r "$ROOT/inventories/demo/demo.simulated_nodes.yml" "$ROOT/inventories/demo/group_vars" "$WORK/job/inventory/"
mkdir -p "$WORK/job/project/collections/ansible_collections/rdma"
cp -r "$ROOT/tools/collections/ansible_collections/rdma/demo" "$WORK/job/project/collections/ansible_collections/rdma/demo"
printf 'ANSIBLE_TRANSFORM_INVALID_GROUP_CHARS: ignore\nANSIBLE_COLLECTIONS_PATH: /runner/project/collections:/usr/share/ansible/collections\n' \
  > "$WORK/job/env/envvars"
printf 'fleet_report_dir: /var/lib/rdma-node/reports\n' > "$WORK/job/env/extravars"
set +e
podman run --rm --user 0 -v "$WORK/job:/runner:Z" -v "$WORK/reports:/var/lib/rdma-node/reports:Z" "$TAG" \
  ansible-runner run /runner -p playbooks/site.yml --ident site >"$WORK/runner.log" 2>&1
rc=$?
set -e
timed runner_site
tail -n 8 "$WORK/runner.log"
size=$(podman image inspect --format '{{.Size}}' "$TAG")
log "steps:$TIMINGS; image $TAG $((size / 1000000)) MB; ansible-runner rc $rc (2: the demo's faulty hosts)"
# The job counts only if it ran to its end (rc 0, or 2 for failed checks), published the fleet summary
# with set_stats and wrote the report files whose totals agree with that summary.
python - "$WORK/job/artifacts/site" "$WORK/reports" "$rc" <<'PY'
import json, pathlib, sys
artifacts, reports, rc = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), int(sys.argv[3])
def fail(message):
    sys.exit("build-ee: the demo run in the image failed its check: " + message)
if rc not in (0, 2):
    fail("ansible-runner exited with %d (expected 0, or 2 for the demo's failed checks)" % rc)
stats = [json.loads(p.read_text()) for p in sorted(artifacts.glob("job_events/*.json"))]
stats = [e for e in stats if e.get("event") == "playbook_on_stats"]
if not stats:
    fail("no playbook_on_stats event under %s (the play did not finish)" % artifacts)
fleet = (stats[0]["event_data"].get("artifact_data") or {}).get("rdma_fleet")
if not fleet or not fleet.get("totals", {}).get("hosts"):
    fail("the stats artifact has no rdma_fleet summary with hosts")
written = sorted(p.name for p in reports.iterdir())
if written != ["fleet-report.html", "fleet-report.json", "fleet-report.md"]:
    fail("the report directory holds %s, expected fleet-report.html, .json and .md" % written)
report = json.loads((reports / "fleet-report.json").read_text())
if report["totals"]["hosts"] != fleet["totals"]["hosts"]:
    fail("fleet-report.json counts %s hosts, rdma_fleet %s" % (report["totals"]["hosts"], fleet["totals"]["hosts"]))
print("build-ee: rdma_fleet totals %s; report files %s" % (json.dumps(fleet["totals"], sort_keys=True), ", ".join(written)))
PY
