import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import QtQuick.Layouts
import Ember

// Settings: the local API server (OpenAI-compatible, docs/api.md) serving the loaded model.
// Off by default; "allow other computers" listens on every interface, with a warning.
GridLayout {
    id: root
    property Settings settings
    property ApiServerStatus server   // null when the app was built without the server
    Theme { id: theme; dark: root.Material.theme === Material.Dark }

    columns: 2
    columnSpacing: 16

    Label { text: qsTr("Local API server"); font.bold: true; Layout.columnSpan: 2; Layout.topMargin: 12 }
    Label {
        Layout.columnSpan: 2
        Layout.fillWidth: true
        wrapMode: Text.Wrap
        color: Material.hintTextColor
        text: root.server ? qsTr("Serves the loaded model over an OpenAI-compatible API, for editors, scripts and agent tools. Its requests wait in turn with your chats.")
                          : qsTr("This build of Ember has no API server.")
    }
    Label { text: qsTr("Serve the loaded model") }
    Switch {
        objectName: "apiServerSwitch"
        enabled: !!root.server
        checked: !!root.settings.apiServerEnabled
        onToggled: root.settings.apiServerEnabled = checked
    }
    Label { text: qsTr("Port") }
    SpinBox {
        objectName: "apiServerPort"
        from: 1024; to: 65535; editable: true
        value: root.settings.apiServerPort || 8080
        textFromValue: (v) => String(v)   // no thousands separator in a port
        valueFromText: (t) => parseInt(t)
        onValueModified: root.settings.apiServerPort = value
    }
    Label { text: qsTr("API key (optional)") }
    TextField {
        objectName: "apiServerKey"
        Layout.fillWidth: true
        placeholderText: qsTr("none: any client may connect")
        echoMode: activeFocus ? TextInput.Normal : TextInput.Password
        text: root.settings.apiServerKey || ""
        onEditingFinished: root.settings.apiServerKey = text
    }
    CheckBox {
        objectName: "apiServerAllowNetwork"
        Layout.columnSpan: 2
        text: qsTr("Allow other computers to connect")
        checked: !!root.settings.apiServerAllowNetwork
        onToggled: root.settings.apiServerAllowNetwork = checked
    }
    Label {
        objectName: "apiServerWarning"
        Layout.columnSpan: 2
        Layout.fillWidth: true
        visible: !!root.settings.apiServerAllowNetwork
        wrapMode: Text.Wrap
        color: theme.warning
        text: (root.settings.apiServerKey || "").length
              ? qsTr("Anyone on your network who has the key can use the model, and the connection is not encrypted.")
              : qsTr("Anyone on your network can use the model: set an API key. The connection is not encrypted.")
    }
    Label {
        objectName: "apiServerStatus"
        Layout.columnSpan: 2
        Layout.fillWidth: true
        wrapMode: Text.Wrap
        visible: !!root.server && (root.server.running || root.server.error.length > 0)
        color: root.server && root.server.error.length ? theme.failure : Material.foreground
        text: !root.server ? ""
            : root.server.error.length ? root.server.error
            : qsTr("Listening on %1 · %2 · %n request(s) served", "", root.server.requestsServed)
                  .arg(root.server.address)
                  .arg(root.server.modelId.length ? qsTr("model “%1”").arg(root.server.modelId) : qsTr("no model loaded"))
    }
}
