"""fme's test suite: one folder per subpackage of fme, one file per module or behaviour."""
