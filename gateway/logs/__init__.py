"""Logs: the /logs collection over the /rosout ring (gateway/ros/rosout.py), handlers and wire shapes."""
