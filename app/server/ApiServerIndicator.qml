import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import Ember

// In the header while the local API server runs: its address and how many requests it
// served; red when it could not start. A click opens the settings.
ToolButton {
    id: root
    property ApiServerStatus server   // null when the app was built without the server
    signal settingsRequested()
    Theme { id: theme; dark: root.Material.theme === Material.Dark }

    objectName: "apiServerIndicator"
    readonly property bool failed: !!server && server.error.length > 0
    visible: !!server && (server.running || failed)
    text: failed ? qsTr("API ⚠")
                 : qsTr("API · %1").arg(server ? server.requestsServed : 0)
    Material.foreground: failed ? theme.failure : theme.success
    onClicked: root.settingsRequested()
    ToolTip.visible: hovered
    ToolTip.delay: 400
    ToolTip.text: !server ? ""
        : failed ? server.error
        : qsTr("Local API server on %1: %n request(s) served, %2 waiting or running", "", server.requestsServed)
              .arg(server.address).arg(server.requestsWaiting)
}
