"""/api/v1/auth/: the CSRF cookie, session login and logout, and the current user with what
they may do (the `can` flags, one per job_actions.ACTIONS entry). Token authentication
itself is api/authentication.py's."""
from django.contrib.auth import authenticate, get_user_model, login, logout
from django.middleware.csrf import get_token
from django.utils.decorators import method_decorator
from django.views.decorators.csrf import ensure_csrf_cookie
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers, status
from rest_framework.authentication import SessionAuthentication
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.response import Response

from .. import conf
from ..services import job_actions
from .base import JobQueueAPIView
from .fields import JobQueueModelSerializer, StrictSerializer
from .schema import errors, extend_schema
from .throttles import LoginThrottle


class LoginSerializer(StrictSerializer):
    username = serializers.CharField(max_length=150)
    password = serializers.CharField(max_length=4096, trim_whitespace=False,
                                     style={"input_type": "password"})


# What the user may do: view, create, each action of job_actions.ACTIONS, change a queue.
_Can = type("_Can", (serializers.Serializer,), {
    "view": serializers.BooleanField(),
    "create": serializers.BooleanField(),
    **{name: serializers.BooleanField(help_text=f"{name.capitalize()} {a.takes} ({a.permission}).")
       for name, a in job_actions.ACTIONS.items()},
    "change_queue": serializers.BooleanField(help_text=(
        "Set a queue's concurrency limit (change_queuesetting).")),
    "view_audit_log": serializers.BooleanField(help_text=(
        "Read the audit log, who did what (view_auditlogentry).")),
})


class UserSerializer(JobQueueModelSerializer):
    permissions = serializers.SerializerMethodField()
    can = serializers.SerializerMethodField()

    class Meta:
        model = get_user_model()
        fields = ["id", "username", "is_staff", "is_superuser", "permissions", "can"]
        read_only_fields = fields

    def get_permissions(self, user) -> list[str]:
        return sorted(user.get_all_permissions())

    @extend_schema_field(_Can)
    def get_can(self, user):
        return {
            "view": user.has_perm("django_pg_jobqueue.view_job"),
            "create": user.has_perm("django_pg_jobqueue.add_job"),
            **{name: user.has_perm(a.perm) for name, a in job_actions.ACTIONS.items()},
            "change_queue": user.has_perm("django_pg_jobqueue.change_queuesetting"),
            "view_audit_log": user.has_perm("django_pg_jobqueue.view_auditlogentry"),
        }


class CsrfSerializer(serializers.Serializer):
    csrf_token = serializers.CharField(help_text="Send it back in the X-CSRFToken header.")


def _enforce_csrf(request) -> None:
    """Session login/logout are CSRF-protected even before there is a session."""
    SessionAuthentication().enforce_csrf(request)


class CsrfView(JobQueueAPIView):
    authentication_classes = []
    permission_classes = [AllowAny]

    @extend_schema(summary="Set the CSRF cookie for session writes", tags=["auth"], auth=[],
                   responses={200: CsrfSerializer})
    @method_decorator(ensure_csrf_cookie)
    def get(self, request):
        return Response({"csrf_token": get_token(request)})


class LoginView(JobQueueAPIView):
    authentication_classes = []
    permission_classes = [AllowAny]
    throttle_classes = [LoginThrottle]

    @extend_schema(
        summary="Log in (session)", tags=["auth"], auth=[], request=LoginSerializer,
        description="Starts a session (cookie) for the UI. Needs the CSRF cookie (GET "
                    "/api/v1/auth/csrf/) and its value in the X-CSRFToken header. Off unless "
                    "the host sets JOB_API_PASSWORD_LOGIN = True: 404 (`login_disabled`) "
                    "then; log in through the site's own login (LOGIN_URL) instead.",
        responses={200: UserSerializer, **errors(400, 403, 404, 429)},
    )
    def post(self, request):
        if not conf.get().API_PASSWORD_LOGIN:
            raise NotFound("the dashboard's password login is off (JOB_API_PASSWORD_LOGIN): "
                           "log in through the site's own login page", code="login_disabled")
        _enforce_csrf(request)
        serializer = LoginSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        user = authenticate(request._request, **serializer.validated_data)
        if user is None:
            raise ValidationError({"non_field_errors": ["invalid username or password."]})
        login(request._request, user)
        return Response(UserSerializer(user).data)


class LogoutView(JobQueueAPIView):
    permission_classes = [AllowAny]

    @extend_schema(summary="Log out (end the session)", tags=["auth"], request=None,
                   responses={204: None, **errors(403)})
    def post(self, request):
        # A session user got here past SessionAuthentication's CSRF check; a token user has
        # no session to end.
        if request.user.is_authenticated and request.auth is None:
            logout(request._request)
        return Response(status=status.HTTP_204_NO_CONTENT)


class MeView(JobQueueAPIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(summary="The current user and what they may do", tags=["auth"],
                   responses={200: UserSerializer, **errors(401)})
    def get(self, request):
        return Response(UserSerializer(request.user).data)
