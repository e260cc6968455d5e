"""Logs: the /logs collection over the /rosout ring (ros/topics/rosout.py), handlers and wire shapes."""
