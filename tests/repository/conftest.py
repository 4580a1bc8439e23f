"""The repository layer: the repository itself against its code and data (README, the publishing
workflow, dependency pins, the measurement records, the question sets, the browser runtime's types, the
tests' own layout)."""


def pytest_configure(config):
    # mirror_dir, for the question sets; the plugin the builder and browser layers share (support.builds)
    config.pluginmanager.import_plugin("support.builds")
