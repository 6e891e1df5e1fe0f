import QtQuick
import QtQuick.Controls
import QtTest
import Ember

// The "Local API server" settings: the switch, port, key and network choice write the settings;
// the warning shows only for other computers; the server's state and errors are shown.
Item {
    id: root
    width: 600
    height: 600

    QtObject {
        id: mockSettings
        property bool apiServerEnabled: false
        property int apiServerPort: 8080
        property string apiServerKey: ""
        property bool apiServerAllowNetwork: false
    }
    QtObject {
        id: mockServer
        property bool running: false
        property string address: ""
        property string error: ""
        property int requestsServed: 0
        property int requestsWaiting: 0
        property string modelId: ""
    }

    ApiServerSection {
        id: section
        width: parent.width
        settings: mockSettings
        server: mockServer
    }
    ApiServerIndicator { id: indicator; server: mockServer; y: 500 }

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
            const sw = child(section, "apiServerSwitch")
            verify(sw)
            compare(sw.checked, false)           // off by default
            compare(indicator.visible, false)
            mouseClick(sw)
            compare(mockSettings.apiServerEnabled, true)

            const warning = child(section, "apiServerWarning")
            compare(warning.visible, false)
            mouseClick(child(section, "apiServerAllowNetwork"))
            compare(mockSettings.apiServerAllowNetwork, true)
            compare(warning.visible, true)
            verify(warning.text.indexOf("set an API key") >= 0)
            mockSettings.apiServerKey = "k"
            verify(warning.text.indexOf("set an API key") < 0)

            const status = child(section, "apiServerStatus")
            mockServer.running = true
            mockServer.address = "http://127.0.0.1:8080/v1"
            mockServer.modelId = "tiny"
            mockServer.requestsServed = 3
            verify(status.visible)
            verify(status.text.indexOf("http://127.0.0.1:8080/v1") >= 0, status.text)
            verify(status.text.indexOf("3") >= 0, status.text)
            compare(indicator.visible, true)
            verify(indicator.text.indexOf("3") >= 0, indicator.text)

            mockServer.running = false
            mockServer.error = "Port 8080 is already in use by another program."
            compare(status.text, mockServer.error)
            compare(indicator.visible, true)     // a failure shows too
        }
    }
}
