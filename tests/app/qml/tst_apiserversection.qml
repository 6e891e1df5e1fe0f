import QtQuick
import QtQuick.Controls
import QtTest
import Ember

// The "Local API server" settings: the switch, port, key and network choice write the settings;
// the warning shows only for other computers; the server's state and errors are shown. The real
// Settings; the server's state set by the test.
Item {
    id: root
    width: 600
    height: 600

    readonly property Settings settings: fixture.settings()
    readonly property ApiServerStatus server: fixture.apiServer()

    ApiServerSection {
        id: section
        width: parent.width
        settings: root.settings
        server: root.server
    }
    ApiServerIndicator { id: indicator; server: root.server; y: 500 }

    TestCase {
        name: "ApiServerSection"
        when: windowShown

        function child(item, name) {
            if (item.objectName === name) return item
            for (let i = 0; i < item.children.length; ++i) {
                const found = child(item.children[i], name)
                if (found) return found
            }
            return null
        }

        function test_settingsAndState() {
            root.settings.apiServerEnabled = false
            root.settings.apiServerAllowNetwork = false
            root.settings.apiServerKey = ""
            const sw = child(section, "apiServerSwitch")
            verify(sw)
            compare(sw.checked, false)           // off by default
            compare(indicator.visible, false)
            mouseClick(sw)
            compare(root.settings.apiServerEnabled, true)

            const warning = child(section, "apiServerWarning")
            compare(warning.visible, false)
            mouseClick(child(section, "apiServerAllowNetwork"))
            compare(root.settings.apiServerAllowNetwork, true)
            compare(warning.visible, true)
            verify(warning.text.indexOf("set an API key") >= 0)
            root.settings.apiServerKey = "k"
            verify(warning.text.indexOf("set an API key") < 0)

            const status = child(section, "apiServerStatus")
            root.server.setRunning(true, "http://127.0.0.1:8080/v1")
            root.server.setModelId("tiny")
            root.server.setRequests(3, 0)
            verify(status.visible)
            verify(status.text.indexOf("http://127.0.0.1:8080/v1") >= 0, status.text)
            verify(status.text.indexOf("3") >= 0, status.text)
            compare(indicator.visible, true)
            verify(indicator.text.indexOf("3") >= 0, indicator.text)

            root.server.setRunning(false, "")
            root.server.setError("Port 8080 is already in use by another program.")
            compare(status.text, root.server.error)
            compare(indicator.visible, true)     // a failure shows too
        }
    }
}
