pragma ComponentBehavior: Bound
import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import QtQuick.Layouts
import Ember

// Conversations: new, search, select, rename, delete.
Pane {
    id: root
    property ChatController chat
    padding: 8
    Theme { id: theme; dark: root.Material.theme === Material.Dark }
    Material.background: theme.sidebar

    ColumnLayout {
        anchors.fill: parent
        spacing: 8
        Button {
            objectName: "newChatButton"
            text: qsTr("+  New chat")
            highlighted: true
            Layout.fillWidth: true
            onClicked: root.chat.newConversation()
        }
        TextField {
            objectName: "searchField"
            placeholderText: qsTr("Search conversations")
            Layout.fillWidth: true
            text: root.chat.searchText
            onTextEdited: root.chat.searchText = text
        }
        ListView {
            id: list
            Layout.fillWidth: true
            Layout.fillHeight: true
            clip: true
            model: root.chat.conversations
            ScrollBar.vertical: ScrollBar {}
            delegate: ItemDelegate {
                id: item
                required property real conversationId  // the store's qint64 row id
                required property string title
                width: list.width
                text: title
                highlighted: conversationId === root.chat.currentConversationId
                onClicked: root.chat.selectConversation(conversationId)
                contentItem: RowLayout {
                    Label {
                        text: item.title
                        elide: Text.ElideRight
                        Layout.fillWidth: true
                    }
                    ToolButton {
                        text: "⋯"
                        visible: item.hovered || item.highlighted
                        onClicked: actions.popup()
                    }
                }
                Menu {
                    id: actions
                    MenuItem {
                        text: qsTr("Rename…")
                        onTriggered: renameDialog.ask(item.conversationId, item.title)
                    }
                    MenuItem {
                        text: qsTr("Delete")
                        onTriggered: deleteDialog.ask(item.conversationId, item.title)
                    }
                }
            }
            Label {
                anchors.centerIn: parent
                visible: list.count === 0
                text: root.chat.searchText.length ? qsTr("No matches") : qsTr("No conversations yet")
                color: Material.hintTextColor
            }
        }
    }

    Dialog {
        id: renameDialog
        property real conversationId
        function ask(id, title) { conversationId = id; nameField.text = title; open(); nameField.selectAll() }
        parent: Overlay.overlay
        anchors.centerIn: parent
        modal: true
        title: qsTr("Rename conversation")
        standardButtons: Dialog.Ok | Dialog.Cancel
        TextField {
            id: nameField
            width: 320
            focus: true
            onAccepted: renameDialog.accept()
        }
        onAccepted: root.chat.renameConversation(conversationId, nameField.text)
    }
    Dialog {
        id: deleteDialog
        property real conversationId
        property string name
        function ask(id, title) { conversationId = id; name = title; open() }
        parent: Overlay.overlay
        anchors.centerIn: parent
        modal: true
        title: qsTr("Delete conversation?")
        standardButtons: Dialog.Yes | Dialog.No
        Label { text: qsTr("“%1” and all its messages will be deleted.").arg(deleteDialog.name) }
        onAccepted: root.chat.deleteConversation(conversationId)
    }
}
