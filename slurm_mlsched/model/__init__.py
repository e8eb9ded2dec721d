"""Pure model types: cluster snapshot, job request, decision (MODEL.md §1–2)."""

from .allreduce import AllreduceParams, Launcher, LinkKind, RingKind
from .cluster import ClusterSnapshot, Machine, Reservation
from .decision import Decision, Form, Mode, NodeCount, Role, RoundingTrial, SlotPlan, TrialRule
from .eligibility import eligible_nodes, gpu_mask, restricts, type_allowed
from .job import DEFAULT_PS_BANDWIDTH_FACTOR, Architecture, JobProfile, JobRequest
from .resources import RESOURCE_NAMES, Resources

__all__ = [
    "DEFAULT_PS_BANDWIDTH_FACTOR",
    "RESOURCE_NAMES",
    "AllreduceParams",
    "Architecture",
    "ClusterSnapshot",
    "Decision",
    "Form",
    "JobProfile",
    "JobRequest",
    "Launcher",
    "LinkKind",
    "Machine",
    "Mode",
    "NodeCount",
    "Reservation",
    "Resources",
    "RingKind",
    "Role",
    "RoundingTrial",
    "SlotPlan",
    "TrialRule",
    "eligible_nodes",
    "gpu_mask",
    "restricts",
    "type_allowed",
]
