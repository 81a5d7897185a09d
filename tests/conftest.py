pytest_plugins = ["trainop.testing.testenv"]
