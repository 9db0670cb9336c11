import ctrlkit


@ctrlkit.hookimpl
def register_datasets(register):
    register("jsonl", "ctrlkit_datasets.files:JsonlDataset")
    register("csv", "ctrlkit_datasets.files:CsvDataset")
    register("sample", "ctrlkit_datasets.sample:Sample")
    register("newts", "ctrlkit_datasets.newts:Newts")
