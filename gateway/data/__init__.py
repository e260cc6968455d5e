"""Data: reads and writes of topic data, the data read's body cache and its wire shapes."""
