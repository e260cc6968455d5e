"""Bulk data: recordings and uploads of an entity over the black-box recorder (recorder/), the handlers."""
