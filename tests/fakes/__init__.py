"""Test fakes shared across the suite. Import as ``from tests.fakes.chat import ScriptedChatModel``."""
