"""Operations: services and actions of an entity (calls in gateway/ros/), the handlers and wire shapes."""
