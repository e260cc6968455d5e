"""Settings: the table of every setting (default, range, meaning), loading and checking them,
and the keys of features not in this build."""
