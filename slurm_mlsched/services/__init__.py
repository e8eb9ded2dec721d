"""Use cases (plan, and later submit, audit, replay): they wire the core to adapters and
return data. They never print; the CLI renders what they return."""
