"""``mcp deploy kubernetes``: what a platform team applies to run a registered model on Kubernetes.

From the model's registry record and its inference contract it renders, into one folder: a
multi-stage Dockerfile with the registry export beside it (the image's build context), the
Deployment, Service, HorizontalPodAutoscaler and PodDisruptionBudget, a KServe flavour
(ClusterServingRuntime + InferenceService) and the ``ModelService`` CustomResourceDefinition whose
schema is the contract's, with an example resource.
"""

from mcp2026ai.deploy.kubernetes.options import KubernetesOptions
from mcp2026ai.deploy.kubernetes.render import Rendered, render

__all__ = ["KubernetesOptions", "Rendered", "render"]
