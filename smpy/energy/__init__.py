"""Energy plugins: host power states and link power (listen to the models' signals)."""

from smpy.energy.host_energy import HostEnergy, PowerRange, parse_wattage_per_state

__all__ = ["HostEnergy", "PowerRange", "parse_wattage_per_state"]
