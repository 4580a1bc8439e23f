"""The builder layer: the build and its stages, the CLI, evaluation, serve, the citation graph and Ask's
CLI, on the suite's builds (tests/support/builds.py), offline."""

from builder.offline import load_onnxruntime_first, use_offline_environment

use_offline_environment()
load_onnxruntime_first()  # test modules import usearch at their top


def pytest_configure(config):
    # The builds' fixtures as one plugin, whichever layer registers it first: the builder and browser
    # layers then share one instance of each session fixture (a conftest's own are one per conftest).
    config.pluginmanager.import_plugin("support.builds")
