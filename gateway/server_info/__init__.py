"""Server-level resources: root, version-info, health, the OpenAPI documents, and the 501
routes of features this build does not serve."""
