"""Configurations: parameters of an entity (ros/calls/parameters.py), the handlers and wire shapes."""
