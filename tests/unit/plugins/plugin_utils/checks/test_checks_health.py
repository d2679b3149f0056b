"""The node_health checks on real sysfs trees (gpud's H100, prometheus/procfs), on the demo's nodes
read by the real ib_facts module, and on synthetic trees for the edge cases."""

from __future__ import annotations

import pytest
import sysfs_tree
import yaml

from ansible_collections.rdma.node.plugins.plugin_utils._registry import CheckError
from ansible_collections.rdma.node.plugins.module_utils._ib_collect import read_ib_facts
from ansible_collections.rdma.node.plugins.modules import ib_facts
from ansible_collections.rdma.node.plugins.plugin_utils._evaluation import evaluate_role
from testpaths import COLLECTION_ROOT, FIXTURES

DEFAULTS = {key[len("node_health_"):]: value for key, value in
            yaml.safe_load((COLLECTION_ROOT / "roles/node_health/defaults/main.yml").read_text()).items()}


def facts_of(root, proc_root=None, subsets=("all",), at=1000.0):
    facts, _warnings = read_ib_facts({"sysfs_root": root, "proc_root": proc_root, "gather_subset": list(subsets)})
    facts["counters_time"] = at
    return facts


def run(rdma, limits=None, **params):
    facts = {"rdma": rdma}
    if limits is not None:
        facts["rdma_memlock"] = limits
    return evaluate_role("node_health", facts, dict(DEFAULTS, **params), subject="node")


def found(result, check=None):
    return sorted((f["check"], f["severity"], f["subject"]) for f in result["findings"] if check in (None, f["check"]))


def sample_note(result):
    """Why counter_rising could not compare: its not-checked entry about the earlier sample."""
    (entry,) = [e for e in result["status"]["not_checked"] if e["check"] == "counter_rising" and e["subject"] == "counter sample"]
    return entry["reason"]


def message(result, check):
    (text,) = [f["message"] for f in result["findings"] if f["check"] == check]
    return text


# --------------------------------------------------------------------------- real trees


@pytest.fixture(scope="module")
def h100(tmp_path_factory):
    dest = str(tmp_path_factory.mktemp("h100") / "sys")
    sysfs_tree.unpack((FIXTURES / "sysfs/gpud-h100.sysfs").read_bytes(), dest)
    return dest


def test_h100_saturated_counters_and_totals_over_the_ibcheckerrs_limits(h100):
    result = run(facts_of(h100))
    ports = ["mlx5_0/1", "mlx5_1/1", "mlx5_4/1", "mlx5_5/1", "mlx5_6/1", "mlx5_7/1", "mlx5_8/1", "mlx5_9/1", "mlx5_bond_0/1"]
    assert found(result, "counter_saturated") == [("counter_saturated", "warning", p) for p in ports]
    mlx5_1 = [f for f in result["findings"] if f["check"] == "counter_saturated" and f["subject"] == "mlx5_1/1"][0]
    assert mlx5_1["actual"] == {"excessive_buffer_overrun_errors": 15, "link_downed": 255}
    assert mlx5_1["message"].startswith("mlx5_1/1: excessive_buffer_overrun_errors=15, link_downed=255 at the maximum of their width")
    # port_rcv_errors is 14 on every port (limit 10); the saturated excessive_buffer_overrun_errors (15 > 10) is
    # reported as saturated, not again as a total.
    assert found(result, "counter_threshold") == [("counter_threshold", "warning", p) for p in ports]
    first = [f for f in result["findings"] if f["check"] == "counter_threshold"][0]
    assert first["message"] == "mlx5_0/1: port_rcv_errors is 14 (limit 10) since the counters were last cleared."
    assert (first["expected"], first["actual"]) == ({"port_rcv_errors": 10}, {"port_rcv_errors": 14})
    # Without a second sample nothing rises, nothing flaps; no pcie links in this export: nothing to say.
    assert found(result, "counter_rising") == found(result, "link_flapping") == found(result, "pcie_degraded") == []
    assert result["status"]["counter_sample"]["time"] == 1000.0
    assert result["status"]["counter_sample"]["ports"]["mlx5_1/1"]["link_downed"] == 255


def test_h100_previous_run_sample_gives_rates_and_a_rise(h100):
    rdma = facts_of(h100, at=1000.0 + 1800)
    previous = run(facts_of(h100, at=1000.0))["status"]["counter_sample"]
    # The export's error counters are 0; this run's read finds them risen (a sample below 0 cannot be).
    now = {p["device"]: p["counters"] for p in rdma["ports"]}
    now["mlx5_4"]["symbol_error"] += 100                      # 100 symbol errors in half an hour: 200/h > 120/h
    now["mlx5_5"]["symbol_error"] += 50                       # 100/h: below the IBTA limit
    now["mlx5_6"]["local_link_integrity_errors"] += 1
    result = run(rdma, previous_sample=previous)
    assert found(result, "counter_rising") == [("counter_rising", "critical", "mlx5_4/1"), ("counter_rising", "critical", "mlx5_6/1")]
    rise = [f for f in result["findings"] if f["subject"] == "mlx5_4/1" and f["check"] == "counter_rising"][0]
    assert rise["message"].endswith("in 30 min (between samples of the previous run), 200 per hour; the limit is 120 per hour.")
    assert (rise["expected"], rise["actual"]) == ("<= 120 per hour", 200.0)
    lli = [f for f in result["findings"] if f["subject"] == "mlx5_6/1"][0]["message"]
    assert "local_link_integrity_errors rose" in lli and lli.endswith("any rise is an error.")
    # With a second sample the totals are not judged again: the rise says whether errors happen now.
    assert found(result, "counter_threshold") == []
    assert result["status"]["counter_rates_per_hour"]["mlx5_5/1"]["symbol_error"] == 100.0
    assert result["status"]["counter_rates_source"] == "the previous run"
    # The rates are extrapolated to an hour: the status says from which interval.
    assert result["status"]["counter_rates_interval_seconds"] == 1800.0


def test_procfs_tree_with_ethernet_and_omni_path_ports_is_quiet(tmp_path):
    sysfs_tree.unpack((FIXTURES / "sysfs/prometheus-procfs.sysfs").read_bytes(), str(tmp_path))
    rdma = facts_of(str(tmp_path))
    assert any(p["counters"] for p in rdma["ports"])
    result = run(rdma)
    assert [f for f in result["findings"] if f["severity"] != "info"] == []
    assert result["status"]["ok"] is True


# --------------------------------------------------------------------------- the demo's nodes, through ib_facts


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    dest = tmp_path_factory.mktemp("demo")
    sysfs_tree.build_hardware_file(str(COLLECTION_ROOT / "inventories/demo/demo.simulated_nodes.yml"), str(dest))
    return dest


def demo_facts(run_module, demo, host):
    root = demo / host
    later = root / "later" / "sys"
    result = run_module(ib_facts, {
        "sysfs_root": str(root / "sys"), "proc_root": str(root / "proc"), "gather_subset": ["all", "kernel_log"],
        "counters_interval": 0.01, "counters_resample_root": str(later if later.is_dir() else root / "sys"),
        "kernel_log_file": str(root / "saved/kernel.log"),
    })
    assert not result.failed, result
    return result["ansible_facts"]["rdma"]


def test_demo_v100_node_01_degraded_pcie_is_one_finding_for_the_shared_link(run_module, demo):
    result = run(demo_facts(run_module, demo, "v100-node-01"))
    assert found(result) == [("gpudirect", "info", "gpudirect"), ("pcie_degraded", "critical", "0000:5e:00")]
    assert message(result, "pcie_degraded") == (
        "The PCIe link of mlx5_0, mlx5_1 (0000:5e:00) runs at Gen3 x8, below the Gen3 x16 it can do (width degraded): "
        "the HCA cannot reach its line rate; reseat the card or check the slot and riser.")
    assert message(result, "gpudirect") == "GPUDirect RDMA is ready via peer memory (nvidia_peermem)."


def test_demo_v100_node_02_flap_is_one_finding_with_both_evidences(run_module, demo):
    rdma = demo_facts(run_module, demo, "v100-node-02")
    assert rdma["kernel_log"]["netdevs"]["ibp94s0f0"]["losses"] == 3
    result = run(rdma)
    assert found(result, "link_flapping") == [("link_flapping", "critical", "mlx5_0/1")]
    text = message(result, "link_flapping")
    assert text.startswith("mlx5_0/1 is flapping: link_downed rose from 3 to 4 in ")
    assert text.endswith("(between samples of this run); the kernel log shows 3 carrier losses of ibp94s0f0.")
    assert found(result, "counter_rising") == found(result, "counter_threshold") == []
    # Five losses in the window are a flap on their own, without a second sample.
    flapping = run(rdma, carrier_losses_max=3, previous_sample=None)
    rdma_once = dict(rdma, counters_earlier=None)
    alone = run(rdma_once, carrier_losses_max=3)
    assert found(flapping, "link_flapping") == found(alone, "link_flapping") == [("link_flapping", "critical", "mlx5_0/1")]
    assert message(alone, "link_flapping") == "mlx5_0/1 is flapping: ibp94s0f0 lost carrier 3 times in the kernel log of the last 24 h."
    assert found(run(rdma_once), "link_flapping") == []


def test_demo_a100_node_01_symbol_errors_rising_and_no_gpudirect(run_module, demo):
    result = run(demo_facts(run_module, demo, "a100-node-01"))
    assert found(result) == [("counter_rising", "critical", "mlx5_1/1"), ("gpudirect", "critical", "gpudirect")]
    assert "symbol_error rose from 1873 to 2410 in" in message(result, "counter_rising")
    assert message(result, "gpudirect") == (
        "GPUDirect RDMA has no working path. Peer memory: neither nvidia_peermem nor nv_peer_mem is loaded. "
        "DMA-BUF: the NVIDIA kernel module is proprietary, DMA-BUF needs the open one.")
    assert result["status"]["counter_rates_per_hour"]["mlx5_1/1"]["symbol_error"] > 120
    assert result["status"]["counter_rates_source"] == "this run" and 0 < result["status"]["counter_rates_interval_seconds"] < 5


def test_demo_a100_node_02_is_healthy_on_the_node(run_module, demo):
    result = run(demo_facts(run_module, demo, "a100-node-02"))
    assert found(result) == [("gpudirect", "info", "gpudirect")]
    # The demo gathers no memlock limits: that check is skipped and says what it lacked.
    assert result["status"]["skipped_checks"] == [
        {"check": "effective_memlock", "missing": ["memlock"], "reason": "the memlock facts were not gathered"}]


# --------------------------------------------------------------------------- synthetic edge cases


def port_tree(root, counters, pcie=None, bdf="0000:3b:00.0", name="mlx5_0", tree=None):
    tree = tree or sysfs_tree.TreeBuilder(root)
    device = tree.hca(name, bdf, pcie=pcie)
    tree.port(device, 1, counters=counters)
    return tree


def test_counter_reset_between_runs_gives_no_delta(tmp_path):
    port_tree(str(tmp_path), {"symbol_error": 3, "link_downed": 0})
    previous = {"time": 10.0, "ports": {"mlx5_0/1": {"symbol_error": 5000, "link_downed": 2}}}
    result = run(facts_of(str(tmp_path)), previous_sample=previous)
    assert found(result) == [("counter_rising", "info", "mlx5_0/1")]  # said, see test_a_counter_that_went_down_is_said
    assert result["status"]["counter_rates_per_hour"] == {}


def test_a_previous_sample_from_the_future_or_without_time_is_ignored(tmp_path):
    port_tree(str(tmp_path), {"symbol_error": 5000})
    for previous in ({"time": 2000.0, "ports": {"mlx5_0/1": {"symbol_error": 0}}}, {"ports": {"mlx5_0/1": {"symbol_error": 0}}}):
        result = run(facts_of(str(tmp_path)), previous_sample=previous)
        assert found(result) == [("counter_threshold", "warning", "mlx5_0/1")]
    assert sample_note(result) == (
        "no usable earlier sample: the previous run's counter sample in the fact cache has the time None, not a number of "
        "seconds since the epoch; counter rises are judged from the next run on")


def test_saturated_counter_is_its_own_finding_not_a_rise(tmp_path):
    port_tree(str(tmp_path), {"symbol_error": 65535, "local_link_integrity_errors": 15})
    previous = {"time": 10.0, "ports": {"mlx5_0/1": {"symbol_error": 1, "local_link_integrity_errors": 0}}}
    result = run(facts_of(str(tmp_path)), previous_sample=previous)
    assert found(result) == [("counter_saturated", "warning", "mlx5_0/1")]


def test_link_downed_rise_is_a_flap_not_a_counter_rise(tmp_path):
    port_tree(str(tmp_path), {"link_downed": 1})
    previous = {"time": 100.0, "ports": {"mlx5_0/1": {"link_downed": 0}}}
    result = run(facts_of(str(tmp_path), at=100.0 + 7200), previous_sample=previous, counter_rise_limits={"link_downed": 0})
    assert found(result) == [("link_flapping", "critical", "mlx5_0/1")]
    assert message(result, "link_flapping") == "mlx5_0/1 is flapping: link_downed rose from 0 to 1 in 2 h (between samples of the previous run)."


def test_pcie_speed_below_max_and_a_device_gone(tmp_path):
    tree = port_tree(str(tmp_path), {}, pcie={"current_speed": "8.0 GT/s PCIe", "max_speed": "16.0 GT/s PCIe",
                                              "current_width": 16, "max_width": 16})
    port_tree(str(tmp_path), {}, bdf="0000:af:00.0", name="mlx5_1", tree=tree)
    (tmp_path / "bus/pci/devices/0000:af:00.0").unlink()
    result = run(facts_of(str(tmp_path)))
    assert found(result) == [("pcie_degraded", "critical", "0000:3b:00"), ("pcie_device_gone", "critical", "mlx5_1")]
    assert "runs at Gen3 x16, below the Gen4 x16 it can do (speed degraded)" in message(result, "pcie_degraded")
    assert message(result, "pcie_device_gone") == "mlx5_1 (PCI 0000:af:00.0) is gone from the PCI bus: 0000:af:00.0 is no longer listed in bus/pci/devices."


GPUDIRECT_READY = {"nvidia_module_loaded": True, "peermem_ready": False, "peermem_module": None, "dma_buf_ready": True,
                   "kernel_release": "6.8.0-45-generic", "peermem_missing": ["neither nvidia_peermem nor nv_peer_mem is loaded"],
                   "dma_buf_missing": []}


def test_gpudirect_modes():
    nothing = dict(GPUDIRECT_READY, nvidia_module_loaded=False, dma_buf_ready=False, dma_buf_missing=["the nvidia module is not loaded"])
    rdma = {"ports": [], "gpus": [], "gpudirect": nothing}
    assert found(run(rdma)) == []  # auto: no GPU and no nvidia module, nothing to judge
    assert found(run(rdma, gpudirect="required")) == [("gpudirect", "critical", "gpudirect")]
    assert found(run(rdma, gpudirect="off")) == []
    ready = run({"ports": [], "gpus": [{"pci_address": "0000:1b:00.0"}], "gpudirect": GPUDIRECT_READY})
    assert message(ready, "gpudirect") == "GPUDirect RDMA is ready via DMA-BUF (open NVIDIA kernel module, kernel 6.8.0-45-generic)."
    # Its choices are the role specification's, checked with the role's options (test_role_options).
    unknown = dict(nothing, nvidia_module_loaded=None, reason="which kernel modules are loaded is unknown: /x/sys has no module directory")
    for rdma, mode in (({"ports": [], "gpus": [{"pci_address": "0000:1b:00.0"}], "gpudirect": unknown}, "auto"),
                       ({"ports": [], "gpus": [], "gpudirect": unknown}, "required")):
        result = run(rdma, gpudirect=mode)
        assert found(result, "gpudirect") == []  # neither a pass nor a failure
        assert [e for e in result["status"]["not_checked"] if e["check"] == "gpudirect"] == [
            {"check": "gpudirect", "subject": "gpudirect", "reason": "which kernel modules are loaded is unknown: /x/sys has no module directory"}]


SWITCH_A = ["0000:16:00.0", "0000:17:00.0"]
SWITCH_B = ["0000:c8:00.0", "0000:c9:00.0"]


def test_gpu_only_across_numa_from_the_active_hca_is_a_warning(tmp_path):
    tree = sysfs_tree.TreeBuilder(str(tmp_path))
    near = tree.hca("mlx5_0", "0000:ca:00.0", numa_node=1, bridges=SWITCH_B + ["0000:c9:10.0"])
    tree.port(near, 1, state="1: DOWN", phys_state="3: Disabled")
    far = tree.hca("mlx5_1", "0000:18:00.0", numa_node=0, bridges=SWITCH_A + ["0000:17:10.0"])
    tree.port(far, 1)
    tree.gpu("0000:cb:00.0", numa_node=1, bridges=SWITCH_B + ["0000:c9:08.0"])
    result = run(facts_of(str(tmp_path)))
    assert found(result, "gpu_hca_locality") == [("gpu_hca_locality", "warning", "0000:cb:00.0")]
    assert message(result, "gpu_hca_locality") == (
        "GPU 0000:cb:00.0 on NUMA node 1 reaches its nearest active compute HCA mlx5_1 only across NUMA nodes (nvidia-smi SYS), "
        "so its RDMA traffic crosses the inter-socket link; the node offers it: mlx5_0 (same_pcie_switch), mlx5_1 (cross_numa).")
    # Counting only InfiniBand HCAs of another link layer leaves no compute HCA: nothing to judge.
    assert found(run(facts_of(str(tmp_path)), locality_link_layers=["Ethernet"]), "gpu_hca_locality") == []


def test_roce_netns_mode_and_missing_gid():
    rdma = {"ports": [], "devices": {"mlx5_bond_0": {}}, "roce": {
        "netns_mode": "exclusive",
        "gids": [{"netdev": "bond0", "address": "10.1.0.2", "type": "RoCE v2"}, {"netdev": "bond0", "address": "10.1.0.3", "type": "IB/RoCE v1"}],
        "netdev_addresses": {"bond0": {"ipv4": ["10.1.0.2", "10.1.0.3"], "ipv6": None}}}}
    result = run(rdma)
    assert found(result) == [("roce_gid_missing", "warning", "bond0"), ("roce_netns_mode", "critical", "netns_mode")]
    assert message(result, "roce_gid_missing").startswith("bond0 has the address 10.1.0.3 but no RoCE v2 GID for it")
    assert message(result, "roce_netns_mode").startswith("The RDMA netns mode is exclusive, but the RDMA shared device plugin expects shared")
    assert found(run(rdma, roce_netns_mode=""), "roce_netns_mode") == []


def test_demo_roce_bond_has_its_gid(run_module, demo):
    rdma = demo_facts(run_module, demo, "a100-node-02")
    assert rdma["roce"]["netdev_addresses"] == {"bond0": {"ipv4": ["10.1.0.2"], "ipv6": None}}
    assert found(run(rdma), "roce_gid_missing") == []


def test_effective_memlock_of_containerd_and_a_new_container():
    memlock = {"containerd": {"unit": "containerd.service", "pid": 812, "memlock": {"soft": "8388608", "hard": "8388608"}},
               "probe": {"ran": True, "rc": 0, "memlock": {"soft": "65536", "hard": "65536"}}}
    result = run({"ports": []}, limits=memlock)
    assert found(result) == [("effective_memlock", "critical", "new container"), ("effective_memlock", "warning", "containerd.service")]
    texts = sorted(f["message"] for f in result["findings"])
    assert texts[0].startswith('A new container gets Max locked memory 65536/65536 (soft/hard), below the unlimited RDMA needs')
    assert texts[1].startswith("containerd (pid 812) runs with Max locked memory 8388608/8388608 (soft/hard), below the unlimited")
    fine = {"containerd": {"pid": 812, "memlock": {"soft": "unlimited", "hard": "unlimited"}}, "probe": None}
    assert found(run({"ports": []}, limits=fine)) == []
    # Wanting 8M: containerd's 8M is enough, the container's 64K is not.
    assert found(run({"ports": []}, limits=memlock, memlock_wanted="8M")) == [("effective_memlock", "critical", "new container")]


def test_bad_parameters_name_the_variable():
    with pytest.raises(CheckError, match=r"node_health_counter_rise_limits.symbol_error: expected 0 \(any rise\), a number per hour, or a "
                                         r"rate such as 5/min, 100/s or 120/h, got 'x'"):
        run({"ports": [{"device": "mlx5_0", "port": 1, "counters": {}}]}, counter_rise_limits={"symbol_error": "x"})
    with pytest.raises(CheckError, match="node_health_carrier_losses_max: expected a whole number of 1 or more, got 0"):
        run({"ports": []}, carrier_losses_max=0)
    with pytest.raises(CheckError, match="node_health_memlock_wanted must be an integer, 'unlimited' or a number"):
        run({"ports": []}, limits={"containerd": {}}, memlock_wanted="lots")


# --------------------------------------------------------------------------- HCA temperature


def sensor(label, now, crit, highest=None):
    return {"hwmon": "hwmon3", "label": label, "input_celsius": now, "highest_celsius": highest, "crit_celsius": crit}


def test_temperature_at_critical_is_critical_near_it_a_warning_and_one_card_is_judged_once():
    rdma = {"ports": [], "temperature": {
        "mlx5_0": {"pci_address": "0000:3b:00.0", "reason": None, "sensors": [sensor("asic", 105.0, 105.0), sensor("Module0", 66.0, 75.0)]},
        # The second function of the same card reports the same ASIC and cable module: judged once.
        "mlx5_1": {"pci_address": "0000:3b:00.1", "reason": None, "sensors": [sensor("asic", 105.0, 105.0), sensor("Module0", 66.0, 75.0)]},
        "mlx5_2": {"pci_address": "0000:5e:00.0", "reason": None, "sensors": [sensor("asic", 64.0, 105.0)]},
    }}
    result = run(rdma)
    assert found(result, "hca_temperature") == [("hca_temperature", "critical", "mlx5_0 asic"), ("hca_temperature", "warning", "mlx5_0 Module0")]
    critical = next(f for f in result["findings"] if f["check"] == "hca_temperature" and f["severity"] == "critical")
    assert critical["message"].startswith("asic of mlx5_0 is at 105 °C, at or above its critical 105 °C")
    assert [entry for entry in result["status"]["not_checked"] if entry["check"] == "hca_temperature"] == []
    assert "hca_temperature" in result["status"]["checks"]


def test_the_margin_is_the_roles_option():
    rdma = {"ports": [], "temperature": {"mlx5_0": {"pci_address": "0000:3b:00.0", "reason": None, "sensors": [sensor("asic", 90.0, 105.0)]}}}
    assert found(run(rdma), "hca_temperature") == []
    assert found(run(rdma, temperature_margin_celsius=20), "hca_temperature") == [("hca_temperature", "warning", "mlx5_0 asic")]


def test_no_hwmon_or_no_threshold_is_not_checked_never_a_pass():
    rdma = {"ports": [], "temperature": {
        "mlx5_0": {"pci_address": "0000:3b:00.0", "sensors": [], "reason": "the kernel exposes no hwmon temperature for it"},
        "mlx5_1": {"pci_address": "0000:5e:00.0", "reason": None, "sensors": [sensor("asic", 70.0, None), sensor("Module0", None, 75.0)]},
    }}
    result = run(rdma)
    assert found(result, "hca_temperature") == []
    assert [entry for entry in result["status"]["not_checked"] if entry["check"] == "hca_temperature"] == [
        {"check": "hca_temperature", "subject": "mlx5_0", "reason": "no temperature of mlx5_0: the kernel exposes no hwmon temperature for it"},
        {"check": "hca_temperature", "subject": "mlx5_1 asic", "reason": "asic of mlx5_1 gives no critical threshold to compare with"},
        {"check": "hca_temperature", "subject": "mlx5_1 Module0", "reason": "Module0 of mlx5_1 gives no current temperature"}]


def test_without_the_temperature_subset_the_check_is_skipped_and_named():
    result = run({"ports": []})
    assert {"check": "hca_temperature", "missing": ["temperature"], "reason": "the temperature facts were not gathered"} \
        in result["status"]["skipped_checks"]
    assert "hca_temperature" not in result["status"]["checks"]


# --------------------------------------------------------------------------- a tampered fact cache (issue 24, item 9)


TAMPERED = {
    "time as text": {"time": "yesterday", "ports": {"mlx5_0/1": {"symbol_error": 0}}},
    "time as a flag": {"time": True, "ports": {"mlx5_0/1": {"symbol_error": 0}}},
    "time not a number": {"time": float("nan"), "ports": {"mlx5_0/1": {"symbol_error": 0}}},
    "time before the epoch": {"time": -1e308, "ports": {"mlx5_0/1": {"symbol_error": 0}}},
    "ports as text": {"time": 10.0, "ports": "mlx5_0/1"},
    "port as a list": {"time": 10.0, "ports": {"mlx5_0/1": ["symbol_error", 0]}},
    "counter as text": {"time": 10.0, "ports": {"mlx5_0/1": {"symbol_error": "0"}}},
    "counter far below zero": {"time": 10.0, "ports": {"mlx5_0/1": {"symbol_error": -10 ** 30}}},
    "counter past 64 bits": {"time": 10.0, "ports": {"mlx5_0/1": {"symbol_error": 2 ** 70}}},
    "counter as a float": {"time": 10.0, "ports": {"mlx5_0/1": {"symbol_error": 1e300}}},
    "a list": [10.0, {"mlx5_0/1": {"symbol_error": 0}}],
}


@pytest.mark.parametrize("case", sorted(TAMPERED))
def test_a_tampered_previous_sample_is_ignored_with_a_note(tmp_path, case):
    port_tree(str(tmp_path), {"symbol_error": 5000})
    result = run(facts_of(str(tmp_path)), previous_sample=TAMPERED[case])
    # judged as a first run: the total over its limit, no rise, no flap, no rate
    assert found(result) == [("counter_threshold", "warning", "mlx5_0/1")]
    assert sample_note(result).startswith("no usable earlier sample: the previous run's counter sample in the fact cache ")
    assert sample_note(result).endswith("; counter rises are judged from the next run on")
    assert result["status"]["counter_rates_per_hour"] == {} and result["status"]["counter_rates_source"] is None


def test_a_tampered_sample_of_this_run_is_ignored_with_a_note(tmp_path):
    port_tree(str(tmp_path), {"symbol_error": 5000})
    rdma = facts_of(str(tmp_path))
    rdma["counters_earlier"] = {"time": 500.0, "ports": {"mlx5_0/1": {"symbol_error": -10 ** 30}}}
    result = run(rdma, previous_sample=None)
    assert found(result) == [("counter_threshold", "warning", "mlx5_0/1")]
    assert sample_note(result) == (
        "no usable earlier sample: this run's first counter read has mlx5_0/1 symbol_error = "
        "-1000000000000000000000000000000, not a count of 0 to 2^64-1; counter rises are judged from the next run on")


def test_a_counter_that_went_down_is_said(tmp_path):
    port_tree(str(tmp_path), {"symbol_error": 3, "link_downed": 0, "port_rcv_errors": 7})
    previous = {"time": 10.0, "ports": {"mlx5_0/1": {"symbol_error": 5000, "link_downed": 2, "port_rcv_errors": 7}}}
    result = run(facts_of(str(tmp_path)), previous_sample=previous)
    assert found(result) == [("counter_rising", "info", "mlx5_0/1")]
    assert message(result, "counter_rising") == (
        "mlx5_0/1: link_downed went down from 2 to 0, symbol_error from 5000 to 3 between samples of the previous run "
        "(counters cleared, a reboot or a driver reload); their rise is judged from this sample on.")
    assert result["status"]["counter_rates_per_hour"] == {"mlx5_0/1": {"port_rcv_errors": 0.0}}


def test_kernel_log_facts_of_the_wrong_shape_fail_nothing(tmp_path):
    port_tree(str(tmp_path), {"symbol_error": 0})
    rdma = facts_of(str(tmp_path))
    rdma["kernel_log"] = {"window_hours": 24, "netdevs": {"ib0": "lost", "ib1": {"losses": "5", "port": "mlx5_0/1"},
                                                          "ib2": {"losses": -3, "port": "mlx5_0/1"},
                                                          "ib3": {"losses": 6, "port": "mlx5_0/1"}}}
    result = run(rdma, previous_sample=None)
    assert found(result) == [("link_flapping", "critical", "mlx5_0/1")]
    assert message(result, "link_flapping") == (
        "mlx5_0/1 is flapping: ib3 lost carrier 6 times in the kernel log of the last 24 h.")


def test_a_kernel_log_that_was_cut_is_said(tmp_path):
    port_tree(str(tmp_path), {"symbol_error": 0})
    rdma = facts_of(str(tmp_path))
    cut = ("journalctl printed more than 67108864 bytes for the window; only its newest 712000 lines were read, so "
           "carrier changes before 2026-11-24T09:00:00+0000 are not counted")
    rdma["kernel_log"] = {"window_hours": 24, "cut": cut, "netdevs": {}}
    result = run(rdma, previous_sample=None)
    assert found(result) == [("link_flapping", "info", "kernel log")]
    assert message(result, "link_flapping") == "The kernel log was not read whole: %s." % cut
