"""Configurations: parameters of an entity (gateway/ros/parameters.py), the handlers and wire shapes."""
