import ctrlkit

from .commands import register_commands  # noqa: F401


@ctrlkit.hookimpl
def register_datasets(register):
    register("jsonl", "ctrlkit_datasets.files:JsonlDataset")
    register("csv", "ctrlkit_datasets.files:CsvDataset")
    register("sample", "ctrlkit_datasets.sample:Sample")
    register("newts", "ctrlkit_datasets.newts:Newts")
    register("macsum", "ctrlkit_datasets.macsum:MacSum")
    register("ctrlsum", "ctrlkit_datasets.ctrlsum:CtrlSum")
    register("fd", "ctrlkit_datasets.fd:FacetBenchmark")
    register("ccsbench", "ctrlkit_datasets.ccsbench:CCSBench")
    register("entsum", "ctrlkit_datasets.entsum:EntSum")
    register("hf", "ctrlkit_datasets.hub:HubDataset")
