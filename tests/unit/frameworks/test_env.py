"""Whole env lists, in order, of representative jobs of every kind (contract §3.3-§3.9)."""

from __future__ import annotations

from typing import Any

import pytest

from trainop.core.topology import LoopbackTopology, ServiceTopology, Topology
from trainop.testing.builders import (
    JobBuilder,
    jax_job,
    mpi_job,
    paddle_job,
    pytorch_job,
    tf_job,
    xgboost_job,
)

from .helpers import container_env, defaulted

K8S = ServiceTopology()


def E(name: str, value: str) -> dict[str, Any]:
    return {"name": name, "value": value}


POD_IP_DUMMY = {"name": "POD_IP_DUMMY", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}


def tf_config(text: str) -> list[dict[str, Any]]:
    return [E("TF_CONFIG", text)]


CASES = [
    # --- PyTorch (§3.4) ---
    pytest.param(
        pytorch_job("a").master(1).workers(2).env("FOO", "bar"),
        "Worker",
        1,
        K8S,
        [
            E("FOO", "bar"),
            E("PYTHONUNBUFFERED", "1"),
            E("MASTER_PORT", "23456"),
            E("PET_MASTER_PORT", "23456"),
            E("MASTER_ADDR", "a-master-0"),
            E("PET_MASTER_ADDR", "a-master-0"),
            E("WORLD_SIZE", "3"),
            E("RANK", "2"),
            E("PET_NODE_RANK", "2"),
            E("PET_NPROC_PER_NODE", "auto"),
            E("PET_NNODES", "3"),
        ],
        id="pytorch with Master: worker 1 has rank 2, user env first",
    ),
    pytest.param(
        pytorch_job("a").master(1).workers(3).nproc_per_node("4").port(29500, rtype="Master"),
        "Master",
        0,
        K8S,
        [
            E("PYTHONUNBUFFERED", "1"),
            E("MASTER_PORT", "29500"),
            E("PET_MASTER_PORT", "29500"),
            E("MASTER_ADDR", "a-master-0"),
            E("PET_MASTER_ADDR", "a-master-0"),
            E("WORLD_SIZE", "16"),
            E("RANK", "0"),
            E("PET_NODE_RANK", "0"),
            E("PET_NPROC_PER_NODE", "4"),
            E("PET_NNODES", "4"),
        ],
        id="pytorch master with declared port and nprocPerNode 4: WORLD_SIZE is N x P",
    ),
    pytest.param(
        pytorch_job("a").workers(2),
        "Worker",
        1,
        K8S,
        [E("PYTHONUNBUFFERED", "1"), E("PET_NPROC_PER_NODE", "auto"), E("PET_NNODES", "2")],
        id="pytorch without Master: no MASTER_ADDR, RANK or WORLD_SIZE",
    ),
    pytest.param(
        pytorch_job("e")
        .workers(2)
        .elastic(
            min=1, max=3, rdzv_conf={"timeout": "900", "join_timeout": "60"}, max_restarts=3, rdzv_id="run1"
        ),
        "Worker",
        0,
        K8S,
        [
            E("PYTHONUNBUFFERED", "1"),
            E("PET_NPROC_PER_NODE", "auto"),
            E("PET_RDZV_ENDPOINT", "e-worker-0:23456"),
            E("PET_RDZV_BACKEND", "c10d"),
            E("PET_NNODES", "1:3"),
            E("PET_MAX_RESTARTS", "3"),
            E("PET_RDZV_ID", "run1"),
            E("PET_RDZV_CONF", "timeout=900,join_timeout=60"),
        ],
        id="elastic with rdzv conf: endpoint at worker-0, nnodes min:max",
    ),
    pytest.param(
        pytorch_job("e")
        .workers(2)
        .elastic(
            rdzv_host="etcd.svc", rdzv_port=2379, rdzv_backend="etcd", standalone=True, n_proc_per_node=8
        ),
        "Worker",
        1,
        K8S,
        [
            E("PYTHONUNBUFFERED", "1"),
            E("PET_RDZV_ENDPOINT", "etcd.svc:2379"),
            E("PET_RDZV_BACKEND", "etcd"),
            E("PET_NNODES", "2:2"),
            E("PET_NPROC_PER_NODE", "8"),
            E("PET_STANDALONE", ""),
        ],
        id="elastic with explicit rdzv host/port, deprecated nProcPerNode, standalone; min=max=workers",
    ),
    pytest.param(
        pytorch_job("a").master(1).workers(1),
        "Worker",
        0,
        LoopbackTopology(ports={("Master", 0): 41001, ("Worker", 0): 41002}),
        [
            E("PYTHONUNBUFFERED", "1"),
            E("MASTER_PORT", "41001"),
            E("PET_MASTER_PORT", "41001"),
            E("MASTER_ADDR", "127.0.0.1"),
            E("PET_MASTER_ADDR", "127.0.0.1"),
            E("WORLD_SIZE", "2"),
            E("RANK", "1"),
            E("PET_NODE_RANK", "1"),
            E("PET_NPROC_PER_NODE", "auto"),
            E("PET_NNODES", "2"),
        ],
        id="pytorch on the local backend: loopback address and the master's allocated port",
    ),
    # --- TF (§3.5) ---
    pytest.param(
        tf_job("t").namespace("ns").ps(1).workers(2),
        "Worker",
        1,
        K8S,
        tf_config(
            '{"cluster":{"ps":["t-ps-0.ns.svc:2222"],"worker":["t-worker-0.ns.svc:2222","t-worker-1.ns.svc:2222"]},'
            '"task":{"type":"worker","index":1},"environment":"cloud"}'
        ),
        id="tf default layout: compact JSON, FQDN hosts, cluster/task/environment",
    ),
    pytest.param(
        tf_job("t").namespace("ns").workers(1).ps(1).evaluator(1).chief(1).port(2223, rtype="PS"),
        "Chief",
        0,
        ServiceTopology(cluster_domain="cluster.local"),
        tf_config(
            '{"cluster":{"chief":["t-chief-0.ns.svc.cluster.local:2222"],'
            '"evaluator":["t-evaluator-0.ns.svc.cluster.local:2222"],'
            '"ps":["t-ps-0.ns.svc.cluster.local:2223"],'
            '"worker":["t-worker-0.ns.svc.cluster.local:2222"]},'
            '"task":{"type":"chief","index":0},"environment":"cloud"}'
        ),
        id="tf default layout: every type incl. chief and evaluator, sorted; per-type port; cluster domain",
    ),
    pytest.param(
        tf_job("t").namespace("ns").ps(2).workers(3).dynamic_worker(),
        "Worker",
        2,
        K8S,
        tf_config(
            '{"cluster":{"worker":{"2":"t-worker-2.ns.svc:2222"},'
            '"ps":["t-ps-0.ns.svc:2222","t-ps-1.ns.svc:2222"]},"task":{"type":"worker","index":2}}'
        ),
        id="tf dynamic worker: a worker sees itself and every PS, no environment",
    ),
    pytest.param(
        tf_job("t").namespace("ns").ps(2).workers(3).dynamic_worker(),
        "PS",
        1,
        K8S,
        tf_config('{"cluster":{"worker":{},"ps":["t-ps-1.ns.svc:2222"]},"task":{"type":"ps","index":1}}'),
        id="tf dynamic worker: a PS sees only itself",
    ),
    pytest.param(
        tf_job("t").namespace("ns").workers(2).dynamic_worker(),
        "Worker",
        0,
        K8S,
        tf_config(
            '{"cluster":{"worker":{"0":"t-worker-0.ns.svc:2222"},"ps":null},"task":{"type":"worker","index":0}}'
        ),
        id="tf dynamic worker without PS: ps is null",
    ),
    pytest.param(
        tf_job("t").namespace("ns").chief(1).workers(1).dynamic_worker(),
        "Chief",
        0,
        K8S,
        tf_config('{"cluster":{"worker":{},"ps":[]},"task":{"type":"chief","index":0}}'),
        id="tf dynamic worker: other types get empty maps",
    ),
    pytest.param(
        tf_job("t").workers(1).env("A", "1"),
        "Worker",
        0,
        K8S,
        [E("A", "1")],
        id="tf single replica: not distributed, no TF_CONFIG",
    ),
    pytest.param(
        tf_job("t").ps(1).workers(1),
        "PS",
        0,
        LoopbackTopology(ports={("PS", 0): 40100, ("Worker", 0): 40101}),
        tf_config(
            '{"cluster":{"ps":["127.0.0.1:40100"],"worker":["127.0.0.1:40101"]},'
            '"task":{"type":"ps","index":0},"environment":"cloud"}'
        ),
        id="tf on the local backend: loopback and per-replica ports",
    ),
    # --- XGBoost (§3.6) ---
    pytest.param(
        xgboost_job("x").master(1).workers(2),
        "Worker",
        1,
        K8S,
        [
            E("MASTER_PORT", "9999"),
            E("MASTER_ADDR", "x-master-0"),
            E("WORLD_SIZE", "3"),
            E("RANK", "2"),
            E("PYTHONUNBUFFERED", "1"),
            E("WORKER_PORT", "9999"),
            E("WORKER_ADDRS", "x-worker-0,x-worker-1"),
        ],
        id="xgboost worker: rank offset by Master replicas, N-1 worker addresses",
    ),
    pytest.param(
        xgboost_job("x").master(1),
        "Master",
        0,
        K8S,
        [
            E("MASTER_PORT", "9999"),
            E("MASTER_ADDR", "x-master-0"),
            E("WORLD_SIZE", "1"),
            E("RANK", "0"),
            E("PYTHONUNBUFFERED", "1"),
        ],
        id="xgboost master alone: no WORKER_PORT/WORKER_ADDRS",
    ),
    # --- Paddle (§3.7) ---
    pytest.param(
        paddle_job("p").workers(2),
        "Worker",
        0,
        K8S,
        [
            E("PYTHONUNBUFFERED", "1"),
            E("PADDLE_JOB_ID", "p"),
            E("PADDLE_NNODES", "2"),
            POD_IP_DUMMY,
            E("PADDLE_MASTER", "$(POD_IP_DUMMY):36543"),
        ],
        id="paddle collective: worker 0 rendezvous on its own pod IP",
    ),
    pytest.param(
        paddle_job("p").workers(2),
        "Worker",
        1,
        K8S,
        [
            E("PYTHONUNBUFFERED", "1"),
            E("PADDLE_JOB_ID", "p"),
            E("PADDLE_NNODES", "2"),
            E("PADDLE_MASTER", "p-worker-0:36543"),
        ],
        id="paddle collective: other workers point at worker 0",
    ),
    pytest.param(
        paddle_job("p").master(1).workers(2),
        "Master",
        0,
        K8S,
        [
            E("PYTHONUNBUFFERED", "1"),
            E("PADDLE_JOB_ID", "p"),
            E("PADDLE_NNODES", "3"),
            POD_IP_DUMMY,
            E("PADDLE_MASTER", "$(POD_IP_DUMMY):36543"),
            E("PADDLE_SERVER_NUM", "1"),
        ],
        id="paddle PS mode: master 0 is the rendezvous and a server",
    ),
    pytest.param(
        paddle_job("p").master(1).workers(2),
        "Worker",
        1,
        K8S,
        [
            E("PYTHONUNBUFFERED", "1"),
            E("PADDLE_JOB_ID", "p"),
            E("PADDLE_NNODES", "3"),
            E("PADDLE_MASTER", "p-master-0:36543"),
            E("PADDLE_TRAINER_NUM", "1"),
        ],
        id="paddle PS mode: workers are trainers pointing at master 0",
    ),
    # --- JAX (§3.8) ---
    pytest.param(
        jax_job("j").workers(2),
        "Worker",
        1,
        K8S,
        [
            E("PYTHONUNBUFFERED", "1"),
            E("COORDINATOR_PORT", "6666"),
            E("COORDINATOR_ADDRESS", "j-worker-0"),
            E("NUM_PROCESSES", "2"),
            E("PROCESS_ID", "1"),
        ],
        id="jax: worker 0 coordinates",
    ),
    pytest.param(
        jax_job("j").workers(2),
        "Worker",
        1,
        LoopbackTopology(ports={("Worker", 0): 40200, ("Worker", 1): 40201}),
        [
            E("PYTHONUNBUFFERED", "1"),
            E("COORDINATOR_PORT", "40200"),
            E("COORDINATOR_ADDRESS", "127.0.0.1"),
            E("NUM_PROCESSES", "2"),
            E("PROCESS_ID", "1"),
        ],
        id="jax on the local backend: coordinator port is worker 0's allocated port",
    ),
    # --- MPI launcher (§3.9) ---
    pytest.param(
        mpi_job("m").launcher().workers(2).env("I_MPI_HYDRA_BOOTSTRAP", "ssh", rtype="Launcher"),
        "Launcher",
        0,
        K8S,
        [
            E("I_MPI_HYDRA_BOOTSTRAP", "ssh"),
            E("OMPI_MCA_plm_rsh_agent", "/etc/mpi/kubexec.sh"),
            E("OMPI_MCA_orte_default_hostfile", "/etc/mpi/hostfile"),
            E("NVIDIA_VISIBLE_DEVICES", ""),
            E("NVIDIA_DRIVER_CAPABILITIES", ""),
            E("I_MPI_HYDRA_BOOTSTRAP_EXEC", "/etc/mpi/kubexec.sh"),
        ],
        id="mpi CPU launcher: NVIDIA_* blanked, user's I_MPI_HYDRA_BOOTSTRAP kept",
    ),
    pytest.param(
        mpi_job("m").launcher().workers(2).gpu("Launcher"),
        "Launcher",
        0,
        K8S,
        [
            E("OMPI_MCA_plm_rsh_agent", "/etc/mpi/kubexec.sh"),
            E("OMPI_MCA_orte_default_hostfile", "/etc/mpi/hostfile"),
            E("I_MPI_HYDRA_BOOTSTRAP", "rsh"),
            E("I_MPI_HYDRA_BOOTSTRAP_EXEC", "/etc/mpi/kubexec.sh"),
        ],
        id="mpi GPU launcher: no NVIDIA_* override",
    ),
    pytest.param(
        mpi_job("m").launcher().workers(2).env("A", "1", rtype="Worker"),
        "Worker",
        1,
        K8S,
        [E("A", "1")],
        id="mpi workers get no env",
    ),
]


@pytest.mark.parametrize(("builder", "rtype", "index", "topology", "want"), CASES)
def test_env(
    builder: JobBuilder, rtype: str, index: int, topology: Topology, want: list[dict[str, Any]]
) -> None:
    got = container_env(defaulted(builder), rtype, index, topology)
    assert got == want
