"""The informer against the real API server: list, then watch from the list's resourceVersion; a new
list (as after 410 Gone) reports what changed meanwhile, so store and handlers end up exactly where
the cluster is. (The 410 decision itself: tests/unit/k8s_operator/test_informer.py.)"""

from __future__ import annotations

import asyncio
from typing import Any

from k8s_harness import Cluster

from trainop.backends.kubernetes import resources as r
from trainop.backends.kubernetes.client import build_client, load_config
from trainop.backends.kubernetes.informer import Handlers, Informer

LABEL = "training.kubeflow.org/operator-name"


def pod(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {"containers": [{"name": "c", "image": "example.com/c:1"}], "nodeName": "kwok-node-0"},
    }


async def until(check: Any, timeout: float = 30.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError("condition not reached")
        await asyncio.sleep(0.05)


def test_list_watch_and_relist(cluster: Cluster) -> None:
    ns = cluster.namespace
    ours = {LABEL: "pytorchjob-controller"}
    with cluster.env.client(namespace=ns) as c:
        c.create(r.Pod(pod("before", ours)))
        c.create(r.Pod(pod("unrelated", {"app": "other"})))

    async def go() -> dict[str, Any]:
        client = build_client(load_config(str(cluster.env.kubeconfig)), qps=0, burst=1)
        inf = Informer(client, r.Pod, namespace=ns, labels={LABEL: None}, name="pods")
        seen: list[tuple[str, str]] = []
        inf.add_handlers(
            Handlers(
                on_add=lambda o: seen.append(("add", o["metadata"]["name"])),
                on_update=lambda old, new: seen.append(("update", new["metadata"]["name"])),
                on_delete=lambda o: seen.append(("delete", o["metadata"]["name"])),
            )
        )
        task = asyncio.create_task(inf.run())
        await asyncio.wait_for(inf.synced.wait(), 30)
        listed = sorted(n for _, n in inf.store.objects)
        with cluster.env.client(namespace=ns) as c:
            c.create(r.Pod(pod("during", ours)))
            c.delete(r.Pod, "before", grace_period=0)
        await until(lambda: ("add", "during") in seen and ("delete", "before") in seen)
        watched = sorted(n for _, n in inf.store.objects)
        no_managed_fields = all("managedFields" not in o["metadata"] for o in inf.store.objects.values())

        # Events while no watch runs are caught up by the next list (the relist after 410 Gone).
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        with cluster.env.client(namespace=ns) as c:
            c.create(r.Pod(pod("while-away", ours)))
        task = asyncio.create_task(inf.run())
        await until(lambda: ("add", "while-away") in seen)
        after = sorted(n for _, n in inf.store.objects)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await client.aclose()
        return {
            "listed": listed,
            "watched": watched,
            "after": after,
            "no_managed_fields": no_managed_fields,
        }

    got = asyncio.run(asyncio.wait_for(go(), 120))
    assert got == {
        "listed": ["before"],  # the label selector kept the unrelated pod out
        "watched": ["during"],
        "after": ["during", "while-away"],
        "no_managed_fields": True,
    }


def test_a_watch_the_server_ends_is_opened_again_from_the_last_version_seen(cluster: Cluster) -> None:
    """The API server ends each watch after its timeoutSeconds (1 s here): the informer opens the next
    from the last resourceVersion it saw, so a change made between two watches is still delivered,
    once, and no list is needed (a list would be a relist, counted). ConfigMaps: nothing else in the
    control plane changes them (kwok would update a pod's status)."""
    ns = cluster.namespace
    ours = {LABEL: "pytorchjob-controller"}

    def config_map(name: str) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": ours}}

    async def go() -> tuple[list[tuple[str, str]], int, int]:
        client = build_client(load_config(str(cluster.env.kubeconfig)), qps=0, burst=1)
        inf = Informer(client, r.ConfigMap, namespace=ns, labels={LABEL: None}, name="configmaps")
        inf.watch_timeout = (1, 1)
        seen: list[tuple[str, str]] = []
        inf.add_handlers(
            Handlers(
                on_add=lambda o: seen.append(("add", o["metadata"]["name"])),
                # A watch opened without a version would replay every object as ADDED: updates here.
                on_update=lambda old, new: seen.append(("update", new["metadata"]["name"])),
                on_delete=lambda o: seen.append(("delete", o["metadata"]["name"])),
            )
        )
        task = asyncio.create_task(inf.run())
        await asyncio.wait_for(inf.synced.wait(), 30)
        watches = client.stats.by_method_code[("GET", "200")]
        for i in range(3):  # each change made after the previous watch ended
            at = client.stats.by_method_code[("GET", "200")]
            await until(lambda at=at: client.stats.by_method_code[("GET", "200")] > at)
            with cluster.env.client(namespace=ns) as c:
                c.create(r.ConfigMap(config_map(f"p{i}")))
            await until(lambda i=i: ("add", f"p{i}") in seen)
        reopened = client.stats.by_method_code[("GET", "200")] - watches
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await client.aclose()
        return seen, inf.relists, reopened

    seen, relists, reopened = asyncio.run(asyncio.wait_for(go(), 120))
    assert seen == [("add", "p0"), ("add", "p1"), ("add", "p2")]
    assert relists == 0
    assert reopened >= 3
